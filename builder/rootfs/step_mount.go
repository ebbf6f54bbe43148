package rootfs

import (
	"context"
	"strings"

	"github.com/hashicorp/packer-plugin-sdk/common"
	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
)

// stepMount makes the configured mounts in a private namespace held by a
// helper process (see mountns.go) and unmounts them in Cleanup, which Packer
// runs on success, failure and Ctrl-C alike.
type stepMount struct {
	Mounts      []string
	AptCacheDir string
	ns          *mountNS
}

func (s *stepMount) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	ui := state.Get(stateUI).(packersdk.Ui)
	rootfs := state.Get(stateRootfs).(string)
	plans, err := planMounts(rootfs, s.Mounts, s.AptCacheDir)
	if err != nil {
		return halt(state, err)
	}
	ns, err := startMountNS(ctx, rootfs, plans)
	if err != nil {
		return halt(state, err)
	}
	s.ns = ns
	for _, m := range ns.Mounts() {
		ui.Message("Mounted " + m)
	}
	state.Put(stateMountNS, ns)
	state.Put(stateWrapper, common.CommandWrapper(ns.Wrap))
	return multistep.ActionContinue
}

func (s *stepMount) Cleanup(state multistep.StateBag) {
	if err := s.cleanupNow(state); err != nil {
		state.Get(stateUI).(packersdk.Ui).Error(err.Error())
	}
}

func (s *stepMount) cleanupNow(state multistep.StateBag) error {
	if s.ns == nil {
		return nil
	}
	state.Get(stateUI).(packersdk.Ui).Say("Unmounting " + strings.Join(s.ns.Mounts(), ", "))
	err := s.ns.Close()
	s.ns = nil
	state.Remove(stateMountNS)
	state.Remove(stateWrapper)
	return err
}
