package rootfs

import (
	"context"
	"fmt"

	"github.com/hashicorp/packer-plugin-sdk/common"
	"github.com/hashicorp/packer-plugin-sdk/multistep"
	"github.com/hashicorp/packer-plugin-sdk/multistep/commonsteps"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
)

// stepProvision runs the provisioners through the chroot communicator.
type stepProvision struct{}

func (s *stepProvision) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	ui := state.Get(stateUI).(packersdk.Ui)
	hook := state.Get(stateHook).(packersdk.Hook)
	rootfs := state.Get(stateRootfs).(string)
	ns := state.Get(stateMountNS).(*mountNS)
	wrap := ns.Wrap
	if _, luks := state.GetOk(stateLUKS); luks {
		wrap = initrdOff(ns.Wrap)
	}
	comm := newCommunicator(rootfs, fmt.Sprintf("/proc/%d/root%s", ns.PID(), rootfs), wrap)
	state.Put("communicator", comm)
	hookData := commonsteps.PopulateProvisionHookData(state)
	state.Put("generated_data", hookData)
	if err := hook.Run(ctx, packersdk.HookProvision, ui, comm, hookData); err != nil {
		return halt(state, err)
	}
	return multistep.ActionContinue
}

func (s *stepProvision) Cleanup(multistep.StateBag) {}

// initrdOff runs each provisioner command with INITRD=No, which the
// kernel's initramfs hooks (dracut's and initramfs-tools' postinst.d
// scripts, and dracut's dpkg trigger through its hook) read as "this
// kernel needs no initramfs". An encrypted build makes the image's
// initramfs itself once the provisioners are done (stepLUKSInitramfs), so
// every generic initramfs a package's trigger made before that (one per
// apt run that touched a module or a library) was built only to be thrown
// away. A provisioner that runs dracut or update-initramfs itself still
// can.
func initrdOff(wrap common.CommandWrapper) common.CommandWrapper {
	return func(command string) (string, error) {
		return wrap("INITRD=No " + command)
	}
}
