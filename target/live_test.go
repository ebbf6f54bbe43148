package target

import (
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/target/internal/checktest"
)

func TestLiveHostGolden(t *testing.T) {
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, collecttest.LiveHost())
	env := collecttest.NewEnv(t, dir, true)
	f := checktest.NewFacts(facts.KindHost)
	// tls_probe and ssh would dial the test machine's real ports, and the
	// encryption chain needs device-mapper tables the fake host has no
	// kernel for: each has its own test.
	gather(t, env, f, "os", "kernel", "packages", "cgroup", "network", "firewall", "systemd", "manifest")
	for _, name := range []string{"os", "kernel", "cgroup", "network", "firewall", "systemd"} {
		checktest.WantStatus(t, f, name, facts.StatusOK)
	}
	checktest.WantStatus(t, f, "packages", facts.StatusNotApplicable)
	checktest.WantStatus(t, f, "manifest", facts.StatusNotApplicable)

	if f.Target.Hostname != "running-name" {
		t.Errorf("live hostname %q, want the kernel's", f.Target.Hostname)
	}
	if got := strings.Join(f.Kernel.Cmdline, "|"); !strings.Contains(got, "|acpi_osi=Windows 2020|") {
		t.Errorf("cmdline split %q", got)
	}
	if f.Cgroup.Version != 2 {
		t.Errorf("cgroup %+v", f.Cgroup)
	}
	want := map[string]facts.Listener{
		"tcp 0.0.0.0:22":             {Proto: "tcp", Address: "0.0.0.0", Port: 22, Process: "sshd", PID: 812},
		"tcp 127.0.0.1:631":          {Proto: "tcp", Address: "127.0.0.1", Port: 631},
		"tcp6 :::443":                {Proto: "tcp6", Address: "::", Port: 443, Process: "nginx", PID: 1200},
		"tcp6 ::1:3306":              {Proto: "tcp6", Address: "::1", Port: 3306},
		"tcp6 ::ffff:127.0.0.1:8080": {Proto: "tcp6", Address: "::ffff:127.0.0.1", Port: 8080},
		"udp 127.0.0.53:53":          {Proto: "udp", Address: "127.0.0.53", Port: 53, Process: "systemd-resolve", PID: 640},
	}
	if len(f.Network.Listening) != len(want) {
		t.Errorf("listening %+v, want %d entries (established and duplicate sockets dropped)", f.Network.Listening, len(want))
	}
	for _, l := range f.Network.Listening {
		key := l.Proto + " " + l.Address + ":" + strconv.Itoa(l.Port)
		if want[key] != l {
			t.Errorf("listener %s = %+v, want %+v", key, l, want[key])
		}
	}
	fw := f.Network.Firewall
	if fw.Backend != "nftables" || fw.DefaultInputPolicy != "drop" || !slices.Equal(fw.AllowedPorts, []int{22, 80, 443}) {
		t.Errorf("firewall %+v", fw)
	}
	// The kernel of the fake host cannot be read: the configuration stands
	// in and says so, and a wants link alone does not make it enabled.
	if fw.Source != "file" || !strings.Contains(fw.KernelError, collecttest.NoNetNS) {
		t.Errorf("source %q, kernel error %q; want the file and why", fw.Source, fw.KernelError)
	}
	if fw.Enabled || fw.Unit == nil || fw.Unit.Name != "nftables.service" || fw.Unit.State != "unknown" {
		t.Errorf("enabled %v, unit %+v; want unknown, not enabled", fw.Enabled, fw.Unit)
	}
	if !slices.Contains(f.Systemd.Masked, "runtime-masked.service") {
		t.Errorf("masked %v lacks the runtime mask", f.Systemd.Masked)
	}
	golden(t, "live_host.json", f)
}
