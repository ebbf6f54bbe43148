// Package rootfs is the gpuhost Packer builder "rootfs" (`source
// "gpuhost-rootfs"`): it bootstraps a Debian or Ubuntu suite with mmdebstrap,
// mounts what provisioners need in a private mount namespace, runs the
// provisioners through a chroot communicator, unmounts, and packs the result
// as a directory, a zstd tarball, a raw ext4 image, a qcow2 image, or a
// bootable disk (see disk.go).
package rootfs

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/packer-plugin-sdk/multistep"
	"github.com/hashicorp/packer-plugin-sdk/multistep/commonsteps"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
)

// BuilderID identifies artifacts of this builder.
const BuilderID = "gpuhost.rootfs"

// Builder is the rootfs builder. The zero value is ready for Prepare.
type Builder struct {
	config Config
}

var _ packersdk.Builder = (*Builder)(nil)

// ConfigSpec returns the HCL2 spec of Config.
func (b *Builder) ConfigSpec() hcldec.ObjectSpec { return b.config.FlatMapstructure().HCL2Spec() }

// generatedVars are what a build tells its provisioners (and templates,
// as build.Mirror): the archive the rootfs came from, which the gpuhost-gpu
// provisioner records in the manifest, and so in a lock made from it.
var generatedVars = []string{"Mirror", "Snapshot"}

// Prepare decodes and validates the configuration. It returns the
// generated variables, the warnings, and one error listing every problem
// found.
func (b *Builder) Prepare(raws ...interface{}) ([]string, []string, error) {
	warns, err := b.config.Prepare(raws...)
	return generatedVars, warns, err
}

// namedStep is a step with the name the timing table shows.
type namedStep struct {
	name string
	step multistep.Step
}

// plan returns the steps of a build of c, in order. Unmounting and removing
// policy-rc.d happen in a step of their own before packing, so that no mount
// or build-only file reaches the output; their steps' Cleanup does the same
// again (as a no-op then) when a build stops earlier.
func plan(c *Config) []namedStep {
	policy := &stepPolicyRcD{}
	mount := &stepMount{Mounts: c.Mounts, AptCacheDir: c.AptCacheDir}
	steps := []namedStep{
		{"dirs", &stepPrepareDirs{}},
		{"cache-lookup", &stepBootstrapCacheLookup{}},
		{"mmdebstrap", &stepMmdebstrap{}},
		{"cache-save", &stepBootstrapCacheSave{}},
	}
	if c.lock != nil {
		steps = append(steps, namedStep{"lock-check", &stepLockCheck{}})
	}
	if c.OutputFormat == "disk" {
		steps = append(steps, namedStep{"grub-defaults", &stepGrubDefaults{}})
	}
	if c.encryptedDisk() {
		// Before the provisioners, whose manifest records crypttab.
		steps = append(steps, namedStep{"luks-crypttab", &stepLUKSCrypttab{}})
	}
	steps = append(steps, []namedStep{
		{"policy-rc.d", policy},
		{"mount", mount},
		{"provision", &stepProvision{}},
	}...)
	if c.encryptedDisk() {
		// dracut reads /proc, /sys and /dev of the chroot: before unmount.
		steps = append(steps, namedStep{"luks-initramfs", &stepLUKSInitramfs{}})
	}
	steps = append(steps, []namedStep{
		{"unmount", &stepEarlyCleanup{cleaners: []earlyCleaner{mount, policy}}},
	}...)
	if c.OutputFormat != "disk" {
		return append(steps, namedStep{"tree-digest", &stepTreeDigest{}}, namedStep{"pack", &stepPack{}})
	}
	// The boot configuration is written after the provisioners, whose
	// grub.d drop-ins it reads, and into a tree with nothing mounted.
	return append(steps,
		namedStep{"first-boot", &stepFirstBoot{}},
		namedStep{"boot-config", &stepBootConfig{}},
		namedStep{"tree-digest", &stepTreeDigest{}},
		namedStep{"disk", &stepDisk{}},
		namedStep{"bootloader", &stepBootloader{}},
		namedStep{"disk-output", &stepDiskOutput{}},
	)
}

// Run builds the rootfs and returns its artifact. It prints how long each
// step took, whether the build succeeds or not.
func (b *Builder) Run(ctx context.Context, ui packersdk.Ui, hook packersdk.Hook) (packersdk.Artifact, error) {
	c := &b.config
	t := &timings{}
	state := new(multistep.BasicStateBag)
	state.Put(stateConfig, c)
	state.Put(stateUI, ui)
	state.Put(stateHook, hook)
	state.Put("generated_data", map[string]interface{}{"Mirror": c.Mirror, "Snapshot": c.Snapshot})

	var steps []multistep.Step
	for _, s := range plan(c) {
		steps = append(steps, &timedStep{name: s.name, step: s.step, t: t})
	}
	runner := commonsteps.NewRunner(steps, c.PackerConfig, ui)
	runner.Run(ctx, state)
	ui.Say("Step timings:\n" + t.table())
	if err := stateErr(state); err != nil {
		return nil, err
	}
	return newArtifact(state), nil
}

func stateErr(state multistep.StateBag) error {
	if err, ok := state.GetOk("error"); ok {
		return err.(error)
	}
	if _, ok := state.GetOk(multistep.StateCancelled); ok {
		return errors.New("build was cancelled")
	}
	if _, ok := state.GetOk(multistep.StateHalted); ok {
		return fmt.Errorf("build was halted")
	}
	return nil
}
