package images

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/gpuhost/gpuhost/checks/access"
	"github.com/gpuhost/gpuhost/checks/audit"
	"github.com/gpuhost/gpuhost/checks/network"
	"github.com/gpuhost/gpuhost/checks/tls"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/internal/waivers"
	"github.com/gpuhost/gpuhost/reports"
)

// allowedPorts reads allowed_ports from params-debian-12.yaml.
func allowedPorts(t *testing.T) []int {
	t.Helper()
	data, err := os.ReadFile("params-debian-12.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		AllowedPorts []int `yaml:"allowed_ports"`
	}
	if err := yaml.Unmarshal(data, &p); err != nil {
		t.Fatalf("parsing params-debian-12.yaml: %v", err)
	}
	if len(p.AllowedPorts) == 0 {
		t.Fatal("params-debian-12.yaml sets no allowed_ports")
	}
	return p.AllowedPorts
}

// The nftables file the template installs must read, to the same parser
// the firewall collector uses, as default-drop input that opens only ports
// the params allow, and must open ssh.
func TestNftablesConfDropsInput(t *testing.T) {
	data, err := os.ReadFile("files/nftables.conf")
	if err != nil {
		t.Fatal(err)
	}
	policy, ports, hasInput, err := network.ParseNftables(data)
	if err != nil {
		t.Fatalf("parsing files/nftables.conf: %v", err)
	}
	if !hasInput || policy != "drop" {
		t.Errorf("input hook chain: present=%v policy=%q; want a drop policy", hasInput, policy)
	}
	allowed := allowedPorts(t)
	for _, p := range ports {
		if !slices.Contains(allowed, p) {
			t.Errorf("files/nftables.conf accepts port %d, which params-debian-12.yaml does not allow (%v)", p, allowed)
		}
	}
	if !slices.Contains(ports, 22) {
		t.Errorf("files/nftables.conf does not accept ssh (22): %v", ports)
	}
}

// The section the hardening script appends, after the ssl_conf line it
// adds to [openssl_init], must give system_default MinProtocol TLSv1.3.
func TestOpenSSLSystemDefaultTLS13(t *testing.T) {
	tail, err := os.ReadFile("files/openssl-system-default.cnf")
	if err != nil {
		t.Fatal(err)
	}
	// Debian 12's openssl.cnf, cut to what the chain needs, as the
	// script leaves it.
	cnf := "openssl_conf = openssl_init\nconfig_diagnostics = 1\n[ new_oids ]\n[openssl_init]\nssl_conf = ssl_sect\n[ ca ]\ndefault_ca = CA_default\n" + string(tail)
	c, err := tls.ParseOpenSSL([]byte(cnf))
	if err != nil {
		t.Fatalf("parsing the edited openssl.cnf: %v", err)
	}
	if sd := c.SystemDefault(); sd.MinProtocol != "TLSv1.3" {
		t.Errorf("system_default = %+v; want MinProtocol TLSv1.3", sd)
	}
	script, err := os.ReadFile("scripts/harden-debian-12.sh")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), "a ssl_conf = ssl_sect") {
		t.Error("scripts/harden-debian-12.sh no longer adds ssl_conf = ssl_sect to [openssl_init]")
	}
}

// The waivers must load, cover exactly what Debian 12 cannot provide, and
// apply to the baked image (hostname debian-12-gpu). The encryption waiver
// never covers a live host; what Debian does not package covers the hosts
// booted from the image, and no other.
func TestWaiversDebian12(t *testing.T) {
	list, err := waivers.Load("waivers-debian-12.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, w := range list {
		ids = append(ids, w.ID)
		if len(strings.Fields(w.Justification)) < 20 {
			t.Errorf("%s: justification too short to say why: %q", w.ID, w.Justification)
		}
		image := reports.Target{Kind: "image", Ref: "out/debian-12-gpu/disk.qcow2", Hostname: "debian-12-gpu"}
		if !w.Matches(image) {
			t.Errorf("%s does not cover the baked image %+v", w.ID, image)
		}
		if other := (reports.Target{Kind: "host", Ref: "gpu-node-17", Hostname: "gpu-node-17"}); w.Matches(other) {
			t.Errorf("%s covers a host %+v the image did not boot", w.ID, other)
		}
		booted := reports.Target{Kind: "host", Ref: "debian-12-gpu", Hostname: "debian-12-gpu"}
		if !w.Matches(booted) {
			t.Errorf("%s does not cover the host booted from the image %+v", w.ID, booted)
		}
		other := reports.Target{Kind: "image", Ref: "out/other/disk.qcow2", Hostname: "other"}
		if w.Matches(other) {
			t.Errorf("%s covers another image %+v", w.ID, other)
		}
	}
	slices.Sort(ids)
	// GH-ENC-001 is not among them: the root is LUKS2 (encryption { luks2 = true }).
	if want := []string{"GH-PIN-005", "GH-RT-001", "GH-RT-003"}; !slices.Equal(ids, want) {
		t.Errorf("waived checks %v; want exactly %v (anything else must be fixed in the template)", ids, want)
	}
}

// TestNftablesConfLoadsWithoutNetbase loads the template's ruleset into the
// kernel, in a network namespace of its own, the way nftables.service does
// at boot on the image: without /etc/protocols and /etc/services, which a
// minbase image lacks (they come with netbase). A protocol or service name
// that only those files define makes nft refuse the whole file, as
// "ipv6-icmp" did, and the booted host ran with no firewall at all while
// the file, read offline, passed GH-NET-002. The kernel's own view of the
// loaded ruleset must still be default-drop input with ssh open.
func TestNftablesConfLoadsWithoutNetbase(t *testing.T) {
	testutil.Root(t)
	nft := testutil.Tool(t, "nft", "nftables")
	unshare := testutil.Tool(t, "unshare", "util-linux")
	conf, err := filepath.Abs("files/nftables.conf")
	if err != nil {
		t.Fatal(err)
	}
	// A private mount namespace hides the two files from nft alone; the
	// empty files stand where the image has none.
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	script := `set -e
mount --make-rprivate /
for f in /etc/protocols /etc/services; do if [ -e "$f" ]; then mount --bind "$1" "$f"; fi; done
"$2" -f "$3"
"$2" list ruleset`
	out := testutil.Run(t, time.Minute, unshare, "--net", "--mount", "/bin/sh", "-c", script, "sh", empty, nft, conf)
	policy, ports, _, err := network.ParseNftables([]byte(out))
	if err != nil {
		t.Fatalf("the ruleset the kernel holds: %v\n%s", err, out)
	}
	if policy != "drop" || !slices.Contains(ports, 22) {
		t.Errorf("loaded without netbase, the kernel's input policy is %q with ports %v; want drop with 22 open", policy, ports)
	}
}

// The QEMU waiver covers the booted test VM, which has no GPU, and never
// the image, whose gate must judge the GPU stack as it is.
func TestWaiversQEMU(t *testing.T) {
	list, err := waivers.Load("waivers-qemu.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].ID != "GH-GPU-020" {
		t.Fatalf("waivers-qemu.yaml waives %v; want GH-GPU-020 alone", list)
	}
	w := list[0]
	if !w.Matches(reports.Target{Kind: "host", Ref: "debian-12-gpu", Hostname: "debian-12-gpu"}) {
		t.Error("it does not cover the booted VM")
	}
	for _, other := range []reports.Target{
		{Kind: "image", Ref: "out/debian-12-gpu/disk.qcow2", Hostname: "debian-12-gpu"},
		{Kind: "host", Ref: "gpu-node-17", Hostname: "gpu-node-17"},
	} {
		if w.Matches(other) {
			t.Errorf("it covers %+v", other)
		}
	}
}

// The audit rules the template installs must parse as the audit collector
// reads them and record what the default params ask: root's and users'
// commands in both system call tables, writes to every watched path, and
// runs of the GPU tools.
func TestAuditRulesRecordWhatParamsAsk(t *testing.T) {
	data, err := os.ReadFile("files/audit-gpuhost.rules")
	if err != nil {
		t.Fatal(err)
	}
	rules, err := audit.ParseRules("files/audit-gpuhost.rules", data)
	if err != nil {
		t.Fatal(err)
	}
	var params struct {
		WatchPaths []string `yaml:"audit_watch_paths"`
		GPUTools   []string `yaml:"audit_gpu_tools"`
	}
	defaults, err := os.ReadFile("../policies/params.default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(defaults, &params); err != nil {
		t.Fatal(err)
	}
	watched := map[string]string{}
	execs := map[string]bool{}
	for _, r := range rules {
		if r.Kind == "watch" {
			watched[r.Path] = r.Perms
		}
		if r.Kind == "syscall" && slices.Contains(r.Syscalls, "execve") {
			for _, f := range r.Fields {
				if f.Name == "euid" || f.Name == "auid" {
					execs[r.Arch+" "+f.Name] = true
				}
			}
		}
	}
	for _, p := range params.WatchPaths {
		if !strings.Contains(watched[p], "w") || !strings.Contains(watched[p], "a") {
			t.Errorf("%s is not watched for writes and attribute changes (perms %q)", p, watched[p])
		}
	}
	for _, p := range params.GPUTools {
		if !strings.Contains(watched[p], "x") {
			t.Errorf("%s is not watched for execution", p)
		}
	}
	for _, k := range []string{"b64 euid", "b32 euid", "b64 auid", "b32 auid"} {
		if !execs[k] {
			t.Errorf("no execve rule for %s", k)
		}
	}
}

// The sudoers drop-in grants ALL to the admin group alone, and sets use_pty
// and a log, read by the access collector's parser.
func TestSudoersDropIn(t *testing.T) {
	data, err := os.ReadFile("files/sudoers-gpuhost")
	if err != nil {
		t.Fatal(err)
	}
	s, err := access.ParseSudoers("files/sudoers-gpuhost", data)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Rules) != 1 || !slices.Equal(s.Rules[0].Users, []string{"%gpuhost-admin"}) || !s.Rules[0].AllCommands || s.Rules[0].NoPasswd {
		t.Errorf("rules = %+v", s.Rules)
	}
	var names []string
	for _, d := range s.Defaults {
		names = append(names, d.Name)
	}
	if !slices.Contains(names, "use_pty") || !slices.Contains(names, "logfile") {
		t.Errorf("defaults = %v, want use_pty and logfile", names)
	}
}
