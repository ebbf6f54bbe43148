package target

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/target/internal/checktest"
)

func TestHostileTree(t *testing.T) {
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, map[string]any{
		"var/lib/dpkg/status": collecttest.Symlink("/etc/shadow"),
		// sysroot resolves an absolute link inside the root, as a chroot
		// would: this decoy is what must be read, never the host's file.
		"etc/shadow": "Package: inside-root\nStatus: install ok installed\nVersion: 1\n",
		"etc/fstab":  collecttest.Symlink("fstab2"),
		"etc/fstab2": collecttest.Symlink("/etc/fstab"),
	})
	if err := syscall.Mkfifo(filepath.Join(dir, "etc/crypttab"), 0o644); err != nil {
		t.Fatal(err)
	}
	env := collecttest.NewEnv(t, dir, false)

	t.Run("dpkg status links out of the root", func(t *testing.T) {
		f := checktest.NewFacts(facts.KindRootfs)
		if err := collectOne(t, env, f, "packages"); err != nil {
			t.Fatalf("packages: %v", err)
		}
		if len(f.Packages) != 1 || f.Packages[0].Name != "inside-root" {
			t.Errorf("packages %+v, want only the decoy inside the root", f.Packages)
		}
	})
	t.Run("crypttab is a FIFO", func(t *testing.T) {
		// Reaching the assertion at all shows the open did not block.
		err := collectOne(t, env, checktest.NewFacts(facts.KindRootfs), "encryption")
		if err == nil || !strings.Contains(err.Error(), "crypttab") || !strings.Contains(err.Error(), "FIFO") {
			t.Errorf("FIFO crypttab: %v, want an error naming it", err)
		}
	})
	t.Run("fstab link loop", func(t *testing.T) {
		if err := os.Remove(filepath.Join(dir, "etc/crypttab")); err != nil {
			t.Fatal(err)
		}
		err := collectOne(t, env, checktest.NewFacts(facts.KindRootfs), "encryption")
		if err == nil || !strings.Contains(err.Error(), "fstab") {
			t.Errorf("fstab loop: %v, want an error naming it", err)
		}
	})
}

func TestMissingFilesAreNotErrors(t *testing.T) {
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, map[string]any{"etc/": nil})
	env := collecttest.NewEnv(t, dir, false)
	f := checktest.NewFacts(facts.KindRootfs)
	gather(t, env, f)
	checktest.WantStatus(t, f, "packages", facts.StatusNotApplicable)
	checktest.WantStatus(t, f, "manifest", facts.StatusNotApplicable)
	checktest.WantStatus(t, f, "encryption", facts.StatusOK)
	checktest.WantStatus(t, f, "firewall", facts.StatusOK)
	checktest.WantStatus(t, f, "systemd", facts.StatusOK)
	checktest.WantStatus(t, f, "kernel", facts.StatusOK)
	checktest.WantStatus(t, f, "cgroup", facts.StatusUnavailable)
	checktest.WantStatus(t, f, "os", facts.StatusError)
	if f.Encryption.Crypttab == nil || f.Encryption.Swap == nil || f.Encryption.Root != nil {
		t.Errorf("encryption %+v, want empty non-nil lists and no root", f.Encryption)
	}
	if fw := f.Network.Firewall; fw.Backend != "none" || fw.DefaultInputPolicy != "accept" || fw.AllowedPorts == nil {
		t.Errorf("firewall %+v", fw)
	}
	if f.Systemd.Enabled == nil || f.Systemd.Masked == nil {
		t.Errorf("systemd %+v, want non-nil lists", f.Systemd)
	}
	if f.Kernel.Cmdline == nil {
		t.Error("kernel cmdline nil")
	}
}

func TestLiveOnlyCollectorsOffline(t *testing.T) {
	env := collecttest.NewEnv(t, t.TempDir(), false)
	for _, name := range []string{"network", "tls_probe"} {
		err := collectOne(t, env, checktest.NewFacts(facts.KindRootfs), name)
		if status, _ := collect.Classify(err); status != facts.StatusNotApplicable {
			t.Errorf("%s offline: %v, want not_applicable", name, err)
		}
	}
}
