package rootfs

import (
	"context"
	"errors"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
)

// earlyCleaner is a step whose Cleanup can run before the build ends.
type earlyCleaner interface {
	cleanupNow(multistep.StateBag) error
}

// stepEarlyCleanup undoes the mount and policy-rc.d steps before packing;
// a failure halts the build rather than pack a rootfs in an unknown state.
type stepEarlyCleanup struct {
	cleaners []earlyCleaner
}

func (s *stepEarlyCleanup) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	var errs []error
	for _, c := range s.cleaners {
		if err := c.cleanupNow(state); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return halt(state, err)
	}
	return multistep.ActionContinue
}

func (s *stepEarlyCleanup) Cleanup(multistep.StateBag) {}
