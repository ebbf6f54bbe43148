package rootfs

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
)

// stepPolicyRcD writes /usr/sbin/policy-rc.d, keeping any existing one aside,
// and restores the original state in Cleanup.
type stepPolicyRcD struct {
	saved []byte
	had   bool
	wrote bool
}

func (s *stepPolicyRcD) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	root, err := os.OpenRoot(state.Get(stateRootfs).(string))
	if err != nil {
		return halt(state, err)
	}
	defer root.Close()
	if data, err := root.ReadFile(policyRcDPath); err == nil {
		s.saved, s.had = data, true
	}
	if err := root.MkdirAll("usr/sbin", 0o755); err != nil {
		return halt(state, fmt.Errorf("writing /%s: %w", policyRcDPath, err))
	}
	if err := root.WriteFile(policyRcDPath, []byte(policyRcD), 0o755); err != nil {
		return halt(state, fmt.Errorf("writing /%s: %w", policyRcDPath, err))
	}
	if err := root.Chmod(policyRcDPath, 0o755); err != nil {
		return halt(state, fmt.Errorf("writing /%s: %w", policyRcDPath, err))
	}
	s.wrote = true
	return multistep.ActionContinue
}

func (s *stepPolicyRcD) Cleanup(state multistep.StateBag) {
	if err := s.cleanupNow(state); err != nil {
		state.Get(stateUI).(packersdk.Ui).Error(err.Error())
	}
}

func (s *stepPolicyRcD) cleanupNow(state multistep.StateBag) error {
	if !s.wrote {
		return nil
	}
	s.wrote = false
	root, err := os.OpenRoot(state.Get(stateRootfs).(string))
	if err != nil {
		return err
	}
	defer root.Close()
	if s.had {
		err = root.WriteFile(policyRcDPath, s.saved, 0o755)
	} else {
		err = root.Remove(policyRcDPath)
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("restoring /%s: %w", policyRcDPath, err)
	}
	return nil
}

// policyRcD makes invoke-rc.d refuse to start services while packages are
// installed in the rootfs: they would run on the build machine.
const policyRcD = "#!/bin/sh\n# written by the gpuhost rootfs builder for the build only\nexit 101\n"

const policyRcDPath = "usr/sbin/policy-rc.d"
