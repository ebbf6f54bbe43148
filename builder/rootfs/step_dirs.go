package rootfs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
)

// removeTree removes dir, but refuses when anything is mounted under it in
// this process's namespace: RemoveAll through a bind of /dev would empty the
// machine's /dev.
func removeTree(dir string) error {
	left, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	if len(left) > 0 {
		return fmt.Errorf("not removing %s: still mounted: %s", dir, strings.Join(left, ", "))
	}
	return os.RemoveAll(dir)
}

// stepPrepareDirs makes the output and work directories. An existing output
// is an error unless Packer runs with -force. A cancelled or failed build
// removes what it made, as Packer's own builders do.
type stepPrepareDirs struct {
	made []string
}

func (s *stepPrepareDirs) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	rootfs := filepath.Join(c.WorkDir, "rootfs")
	for _, dir := range []string{c.OutputDir, rootfs} {
		if _, err := os.Lstat(dir); err == nil {
			if !c.PackerForce {
				return halt(state, fmt.Errorf("%s exists; remove it or run packer build -force", dir))
			}
			if err := removeTree(dir); err != nil {
				return halt(state, err)
			}
		}
	}
	for _, dir := range []string{c.OutputDir, c.WorkDir} {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return halt(state, err)
			}
			s.made = append(s.made, dir)
		}
	}
	state.Put(stateRootfs, rootfs)
	return multistep.ActionContinue
}

func (s *stepPrepareDirs) Cleanup(state multistep.StateBag) {
	_, cancelled := state.GetOk(multistep.StateCancelled)
	_, halted := state.GetOk(multistep.StateHalted)
	if !cancelled && !halted {
		return
	}
	ui := state.Get(stateUI).(packersdk.Ui)
	if rootfs, ok := state.GetOk(stateRootfs); ok {
		if err := removeTree(rootfs.(string)); err != nil {
			ui.Error(err.Error())
		}
	}
	for i := len(s.made) - 1; i >= 0; i-- {
		ui.Say("Removing " + s.made[i])
		if err := removeTree(s.made[i]); err != nil {
			ui.Error(err.Error())
		}
	}
}
