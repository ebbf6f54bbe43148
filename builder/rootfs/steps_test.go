package rootfs

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
)

func TestPolicyRcDWrittenAndRestored(t *testing.T) {
	for _, existing := range []bool{false, true} {
		rootfs := fakeRootfs(t)
		p := filepath.Join(rootfs, "usr/sbin/policy-rc.d")
		if existing {
			must(t, os.MkdirAll(filepath.Dir(p), 0o755))
			must(t, os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o755))
		}
		state := testState(rootfs)
		step := &stepPolicyRcD{}
		if step.Run(context.Background(), state) != multistep.ActionContinue {
			t.Fatalf("policy-rc.d step: %v", state.Get("error"))
		}
		data, err := os.ReadFile(p)
		fi, _ := os.Stat(p)
		if err != nil || string(data) != policyRcD || fi.Mode().Perm() != 0o755 {
			t.Fatalf("policy-rc.d during the build: %q %v %v", data, fi.Mode(), err)
		}
		early := &stepEarlyCleanup{cleaners: []earlyCleaner{step}}
		if early.Run(context.Background(), state) != multistep.ActionContinue {
			t.Fatalf("early cleanup: %v", state.Get("error"))
		}
		step.Cleanup(state) // a second undo must change nothing
		data, err = os.ReadFile(p)
		switch {
		case existing && string(data) != "#!/bin/sh\nexit 0\n":
			t.Errorf("the image's own policy-rc.d was not restored: %q, %v", data, err)
		case !existing && err == nil:
			t.Error("policy-rc.d left in the rootfs")
		}
	}
}

func TestPolicyRcDRefusesLinkOut(t *testing.T) {
	rootfs := fakeRootfs(t)
	outside := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(rootfs, "usr"), 0o755))
	must(t, os.Symlink(outside, filepath.Join(rootfs, "usr/sbin")))
	state := testState(rootfs)
	if (&stepPolicyRcD{}).Run(context.Background(), state) != multistep.ActionHalt {
		t.Error("policy-rc.d written through a link out of the rootfs")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("wrote outside the rootfs: %v", entries)
	}
}
