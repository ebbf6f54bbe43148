package target

import (
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/facts/packages"
	"github.com/gpuhost/gpuhost/target/internal/checktest"
)

func TestOfflineImageGolden(t *testing.T) {
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, collecttest.UbuntuImage())
	env := collecttest.NewEnv(t, dir, false)
	f := checktest.NewFacts(facts.KindRootfs)
	// The collectors an image's own files answer for.
	gather(t, env, f, "os", "kernel", "packages", "cgroup", "kubelet", "encryption", "network", "firewall",
		"systemd", "manifest", "containers", "sbom", "tls", "tls_probe")
	for _, name := range []string{"os", "kernel", "packages", "cgroup", "encryption", "firewall", "systemd", "manifest"} {
		checktest.WantStatus(t, f, name, facts.StatusOK)
	}
	checktest.WantStatus(t, f, "network", facts.StatusNotApplicable)
	checktest.WantStatus(t, f, "tls_probe", facts.StatusNotApplicable)

	// The facts a policy leans on, spelled out so a wrong golden cannot
	// hide them.
	if f.Target.Hostname != "gpu-node-01" {
		t.Errorf("hostname %q", f.Target.Hostname)
	}
	if f.Kernel.Release != "5.15.0-105-generic" {
		t.Errorf("release %q, want the newest by Debian order", f.Kernel.Release)
	}
	if want := "console=tty1 console=ttyS0 nvme_core.io_timeout=4294967295"; !strings.Contains(strings.Join(f.Kernel.Cmdline, " "), want) {
		t.Errorf("cmdline %q lacks the cloud image drop-in", f.Kernel.Cmdline)
	}
	if f.Cgroup.Version != 2 || !strings.Contains(f.Cgroup.Source, "unified_cgroup_hierarchy=1") {
		t.Errorf("cgroup %+v", f.Cgroup)
	}
	if p, ok := packages.Installed(f.Packages, "nvidia-driver-535-server"); !ok || !p.Held {
		t.Errorf("driver package %+v %v, want held", p, ok)
	}
	if _, ok := packages.Installed(f.Packages, "old-removed"); ok {
		t.Error("a deinstalled package is listed")
	}
	if f.Network.Listening != nil {
		t.Errorf("offline Listening = %v, want nil", f.Network.Listening)
	}
	if fw := f.Network.Firewall; fw.Backend != "ufw" || !fw.Enabled || fw.DefaultInputPolicy != "drop" {
		t.Errorf("firewall %+v", fw)
	}
	if f.Systemd.Version != 249 {
		t.Errorf("systemd version %d", f.Systemd.Version)
	}
	golden(t, "offline_ubuntu.json", f)
}
