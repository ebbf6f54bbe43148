package rootfs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/packer-plugin-sdk/multistep"

	"github.com/gpuhost/gpuhost/manifest/lock"
)

// lockedTree makes a bootstrapped-looking tree with two packages, and an
// apt cache holding one of their .debs; it returns the rootfs, the cache
// and that .deb's sha256.
func lockedTree(t *testing.T) (rootfs, cache, debSum string) {
	t.Helper()
	rootfs = fakeRootfs(t)
	must(t, os.MkdirAll(filepath.Join(rootfs, "var/lib/dpkg"), 0o755))
	must(t, os.WriteFile(filepath.Join(rootfs, "var/lib/dpkg/status"), []byte(
		"Package: dpkg\nStatus: install ok installed\nArchitecture: amd64\nVersion: 1.21.22\n\n"+
			"Package: tzdata\nStatus: install ok installed\nArchitecture: all\nVersion: 2025b-0+deb12u1\n\n"+
			"Package: gone\nStatus: deinstall ok config-files\nArchitecture: amd64\nVersion: 1\n"), 0o644))
	cache = t.TempDir()
	deb := []byte("a .deb")
	must(t, os.WriteFile(filepath.Join(cache, "tzdata_2025b-0+deb12u1_all.deb"), deb, 0o644))
	sum := sha256.Sum256(deb)
	return rootfs, cache, hex.EncodeToString(sum[:])
}

func runLockCheck(t *testing.T, rootfs, cache, lockText string) (multistep.StepAction, multistep.StateBag) {
	t.Helper()
	l, err := lock.Parse([]byte(lockText))
	if err != nil {
		t.Fatal(err)
	}
	state := testState(rootfs)
	state.Put(stateConfig, &Config{AptCacheDir: cache, LockFile: "base.lock", lock: l})
	return (&stepLockCheck{}).Run(context.Background(), state), state
}

func TestLockCheckHoldsTheBootstrapToTheLock(t *testing.T) {
	rootfs, cache, sum := lockedTree(t)
	other := strings.Repeat("0", 64)
	good := "gpuhost.lock/v1\npackage dpkg=1.21.22 amd64 " + other + "\npackage tzdata=2025b-0+deb12u1 all " + sum + "\npackage curl=7.88 amd64 " + other + "\n"
	if action, state := runLockCheck(t, rootfs, cache, good); action != multistep.ActionContinue {
		t.Fatalf("a bootstrap the lock holds (and more, for the provisioner): %v", state.Get("error"))
	}
	for _, tc := range []struct{ name, lock, want string }{
		{"another version", "gpuhost.lock/v1\npackage dpkg=1.21.21 amd64 " + other + "\npackage tzdata=2025b-0+deb12u1 all " + sum + "\n",
			"package dpkg (amd64): installed at 1.21.22, the lock has 1.21.21"},
		{"another hash", "gpuhost.lock/v1\npackage dpkg=1.21.22 amd64 " + other + "\npackage tzdata=2025b-0+deb12u1 all " + other + "\n",
			"package tzdata=2025b-0+deb12u1 (all): the .deb's sha256 is " + sum + ", the lock has " + other},
		{"an extra package", "gpuhost.lock/v1\npackage tzdata=2025b-0+deb12u1 all " + sum + "\n",
			"extra package dpkg (amd64): installed at 1.21.22, not in the lock"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			action, state := runLockCheck(t, rootfs, cache, tc.lock)
			err, _ := state.Get("error").(error)
			if action != multistep.ActionHalt || err == nil || !strings.Contains(err.Error(), "lock_file: the bootstrap differs from the lock base.lock:\n  "+tc.want) {
				t.Fatalf("action %v, err %v; want the build halted with %q", action, err, tc.want)
			}
		})
	}
}

func TestLockPinsTheBootstrapAndKeysTheCache(t *testing.T) {
	l, err := lock.Parse([]byte("gpuhost.lock/v1\npackage dpkg=1.21.22 amd64 " + strings.Repeat("0", 64) + "\npackage libc6=2.36-9 i386 " + strings.Repeat("1", 64) + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	prefs := string(lockPreferences(l))
	for _, want := range []string{"Package: dpkg\nPin: version 1.21.22\nPin-Priority: 1001\n", "Package: libc6:i386\nPin: version 2.36-9\n"} {
		if !strings.Contains(prefs, want) {
			t.Errorf("preferences lack %q:\n%s", want, prefs)
		}
	}
	c := &Config{Suite: "bookworm", Variant: "minbase", Components: []string{"main"}, Mirror: "http://mirror.invalid/debian"}
	unlocked := bootstrapKey(c, "1.3.5", "r", "")
	args := mmdebstrapArgs(c, "/w/rootfs")
	c.lock = l
	if bootstrapKey(c, "1.3.5", "r", "") == unlocked {
		t.Error("a lock does not change the bootstrap cache key")
	}
	locked := mmdebstrapArgs(c, "/w/rootfs")
	if len(locked) != len(args)+2 || !slices.Contains(locked, `--setup-hook=mkdir -p "$1/etc/apt/preferences.d" && cp '/w/bootstrap-lock.pref' "$1/etc/apt/preferences.d/zz-gpuhost-lock.pref"`) ||
		!slices.Contains(locked, `--customize-hook=rm -f "$1/etc/apt/preferences.d/zz-gpuhost-lock.pref"`) {
		t.Errorf("mmdebstrap's arguments with a lock: %q", locked)
	}
}
