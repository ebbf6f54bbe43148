package rootfs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
)

// stepPack writes the output format. dir needs nothing; tar uses GNU tar,
// which keeps hard links, device nodes, ownership and xattrs (file
// capabilities); raw and qcow2 use mkfs.ext4 -d, which needs no loop device.
type stepPack struct{}

// parseSize reads "4G"-style sizes (binary units, as mkfs.ext4 reads them).
func parseSize(s string) (int64, error) {
	if !sizeRE.MatchString(s) {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	mult := int64(1)
	switch s[len(s)-1] {
	case 'K':
		mult = 1 << 10
	case 'M':
		mult = 1 << 20
	case 'G':
		mult = 1 << 30
	case 'T':
		mult = 1 << 40
	}
	num := strings.TrimRight(s, "KMGT")
	var n int64
	for _, ch := range num {
		if n > (1<<62)/10 {
			return 0, fmt.Errorf("size %q is too large", s)
		}
		n = n*10 + int64(ch-'0')
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n * mult, nil
}

func (s *stepPack) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	ui := state.Get(stateUI).(packersdk.Ui)
	rootfs := state.Get(stateRootfs).(string)
	var files []string
	run := func(name string, args ...string) error {
		cmd := exec.CommandContext(ctx, name, args...)
		if err := runStreaming(cmd, ui); err != nil {
			return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
		}
		return nil
	}
	mkfs := func(img string) error {
		f, err := os.Create(img)
		if err != nil {
			return err
		}
		f.Close()
		size, _ := parseSize(c.ImageSize)
		if err := os.Truncate(img, size); err != nil {
			return err
		}
		return run("mkfs.ext4", "-q", "-F", "-L", "rootfs", "-d", rootfs, img, c.ImageSize)
	}
	var err error
	switch c.OutputFormat {
	case "dir":
		files = []string{rootfs}
	case "tar":
		out := filepath.Join(c.OutputDir, "rootfs.tar.zst")
		ui.Say("Packing " + out)
		err = run("tar", "--create", "--zstd", "--file", out, "--numeric-owner", "--xattrs", "--xattrs-include=*", "--sort=name", "-C", rootfs, ".")
		files = []string{out}
	case "raw":
		out := filepath.Join(c.OutputDir, "rootfs.raw")
		ui.Say("Writing an ext4 image " + out)
		err = mkfs(out)
		files = []string{out}
	case "qcow2":
		out := filepath.Join(c.OutputDir, "rootfs.qcow2")
		raw := filepath.Join(c.WorkDir, "rootfs.raw.tmp")
		ui.Say("Writing a qcow2 image " + out)
		err = mkfs(raw)
		if err == nil {
			err = run("qemu-img", qcow2ConvertArgs(c, raw, out)...)
		}
		os.Remove(raw)
		files = []string{out}
	}
	if err != nil {
		return halt(state, err)
	}
	if c.RemoveRootfs {
		if err := removeTree(rootfs); err != nil {
			return halt(state, err)
		}
		state.Remove(stateRootfs)
	}
	state.Put(stateFiles, files)
	return multistep.ActionContinue
}

func (s *stepPack) Cleanup(multistep.StateBag) {}

// qcow2ConvertArgs are qemu-img's arguments that write the raw image raw as
// the compressed qcow2 out. -m and -W let it compress clusters on every core
// and write them as they finish, since compression is most of the step, and
// the image reads the same (qemu-img compare).
func qcow2ConvertArgs(c *Config, raw, out string) []string {
	return []string{"convert", "-c", "-m", "16", "-W", "-O", "qcow2", "-o", "compression_type=" + c.QCOW2Compression, raw, out}
}
