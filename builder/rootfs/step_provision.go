package rootfs

import (
	"context"
	"fmt"

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
	comm := newCommunicator(rootfs, fmt.Sprintf("/proc/%d/root%s", ns.PID(), rootfs), ns.Wrap)
	state.Put("communicator", comm)
	hookData := commonsteps.PopulateProvisionHookData(state)
	state.Put("generated_data", hookData)
	if err := hook.Run(ctx, packersdk.HookProvision, ui, comm, hookData); err != nil {
		return halt(state, err)
	}
	return multistep.ActionContinue
}

func (s *stepProvision) Cleanup(multistep.StateBag) {}
