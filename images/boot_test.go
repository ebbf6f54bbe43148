package images

// The boot half of TestE2EDebian12: the baked disk booted in QEMU, scanned
// live from inside by gpuhost-selftest.service, and held against what the
// offline gate said of the same disk.

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/internal/qemu"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan/waivers"
)

// TestMain stops every VM a test started when the run is interrupted:
// cleanups do not run on SIGINT, and a QEMU left behind would keep a core
// busy for as long as its guest lives.
func TestMain(m *testing.M) {
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-sigs
		qemu.KillAll()
		fmt.Fprintf(os.Stderr, "images: %s: stopped every VM\n", s)
		os.Exit(130)
	}()
	os.Exit(m.Run())
}

// selftestLimit bounds a boot from power on to the selftest's reports
// under TCG, where everything runs many times slower than on hardware.
const selftestLimit = 25 * time.Minute

// bootRun is one boot of the disk and what its selftest reported.
type bootRun struct {
	name     string
	reports  map[string][]byte
	scan     reports.Report
	drift    reports.Report
	accel    string
	verdict  time.Duration // power on to the reports on the disk
	metrics  string        // /metrics through the forwarded port, when scraped
	noToken  int           // the status of /metrics without the token
	hostKeys []string
}

// agentTLS is the CA and the certificate the agent is given through system
// credentials, as a deployment would give it a CA-signed one.
type agentTLS struct {
	ca       *testutil.CA
	cert     []byte
	key      []byte
	token    string
	caClient *http.Client
}

func newAgentTLS(t *testing.T) *agentTLS {
	t.Helper()
	return newAgentTLSFor(t, "debian-12-gpu")
}

// newAgentTLSFor is newAgentTLS for the host named host.
func newAgentTLSFor(t *testing.T, host string) *agentTLS {
	t.Helper()
	ca := testutil.NewCA(t)
	dir := t.TempDir()
	certPath, keyPath, _ := testutil.WriteCert(t, dir, testutil.CertSpec{CA: ca, DNS: []string{host, "localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	cert, err := os.ReadFile(certPath)
	if err != nil {
		t.Fatal(err)
	}
	key, err := os.ReadFile(keyPath)
	if err != nil {
		t.Fatal(err)
	}
	var tok [16]byte
	if _, err := rand.Read(tok[:]); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), ServerName: host, MinVersion: tls.VersionTLS13}}}
	return &agentTLS{ca: ca, cert: cert, key: key, token: hex.EncodeToString(tok[:]), caClient: client}
}

// bootExtras is what one boot adds to the selftest: kernel modules for
// gpuhost-selftest-modules (selftest inputs), and the MOK certificates a
// new Secure Boot host's UEFI variables hold.
type bootExtras struct {
	inputs map[string][]byte
	moks   [][]byte
	// waivers judge the live scan; nil: the Debian image's (bootWaivers).
	waivers []byte
}

// bootWaivers are the waivers a QEMU boot judges its host with: the
// template's own file and waivers-qemu.yaml, whose waivers are written for
// debian-12-gpu and cover host instead. A file with no waivers adds
// nothing.
func bootWaivers(t *testing.T, template, host string) []byte {
	t.Helper()
	var out []byte
	for _, f := range []string{template, "waivers-qemu.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if f == "waivers-qemu.yaml" {
			b = bytes.ReplaceAll(b, []byte("debian-12-gpu"), []byte(host))
		}
		list, err := waivers.Parse(b, f)
		if err != nil {
			t.Fatal(err)
		}
		if len(list) > 0 {
			out = append(append(out, b...), '\n')
		}
	}
	return out
}

// bootSelftest boots the disk through overlay (made on the first boot, the
// same host on the next) and returns what its selftest reported. With
// scrape, the selftest holds the machine up after writing its reports
// while /metrics is read through the forwarded port.
func bootSelftest(t *testing.T, name, disk, overlay, tpm string, fw qemu.Firmware, agent *agentTLS, scrape bool, extras bootExtras) *bootRun {
	t.Helper()
	dir := filepath.Join(filepath.Dir(overlay), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	judged := extras.waivers
	if judged == nil {
		judged = bootWaivers(t, "waivers-debian-12.yaml", "debian-12-gpu")
	}
	inputs := map[string][]byte{"waivers.yaml": judged}
	maps.Copy(inputs, extras.inputs)
	if scrape {
		inputs["hold"] = []byte("45\n")
	}
	st := filepath.Join(dir, "selftest.raw")
	if err := qemu.WriteSelftestDisk(st, inputs); err != nil {
		t.Fatal(err)
	}
	metricsPort, sshPort := testutil.FreePort(t), testutil.FreePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), selftestLimit+5*time.Minute)
	defer cancel()
	vm, err := qemu.Start(ctx, qemu.Config{
		Disk: disk, Overlay: overlay, OverlaySize: "4G", Firmware: fw, Dir: dir,
		SelftestDisk: st, TPMState: tpm, MOKCerts: extras.moks,
		Forwards: []qemu.Forward{{Host: metricsPort, Guest: 9108}, {Host: sshPort, Guest: 22}},
		Credentials: map[string][]byte{
			"gpuhost.agent-token":   []byte(agent.token),
			"gpuhost.agent-tls-crt": agent.cert,
			"gpuhost.agent-tls-key": agent.key,
		},
		Log: logWriter{t, name},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vm.Stop)
	t.Logf("%s: booting %s with %s on %s (pidfile %s)", name, disk, fw, vm.Accel(), vm.Pidfile())
	run := &bootRun{name: name, accel: vm.Accel()}
	if err := vm.WaitSerial(ctx, "gpuhost-selftest: reports written", selftestLimit); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	run.verdict = time.Since(vm.Started())
	if scrape {
		run.metrics, run.noToken = scrapeMetrics(t, agent, metricsPort)
		run.hostKeys = sshHostKeys(t, sshPort)
	}
	if err := vm.Wait(ctx, 5*time.Minute); err != nil {
		t.Fatalf("%s: after its reports the guest did not power off: %v", name, err)
	}
	run.reports, err = qemu.ReadSelftestDisk(st)
	if err != nil {
		t.Fatalf("%s: %v\nthe console's last lines:\n%s", name, err, vm.Tail(qemu.TailLines))
	}
	if err := os.WriteFile(filepath.Join(dir, "serial.txt"), []byte(vm.Tail(100000)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "reports"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range run.reports {
		if err := os.WriteFile(filepath.Join(dir, "reports", filepath.Base(name)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for file, into := range map[string]*reports.Report{"scan.json": &run.scan, "drift.json": &run.drift} {
		if err := json.Unmarshal(run.reports[file], into); err != nil {
			t.Fatalf("%s: %s from the guest: %v\n%s\nstderr: %s", name, file, err, run.reports[file], run.reports[strings.TrimSuffix(file, ".json")+".err"])
		}
	}
	t.Logf("%s: %s, %s: power on to the live verdict on disk %s; %s", name, fw, run.accel, run.verdict.Round(time.Second), selftestTimes(vm))
	recordTimings(t, dir, run, fw, "power on to the selftest's reports on its disk", vm.Tail(100000))
	return run
}

// recordTimings writes the boot's figures beside its console, where the
// artifacts keep them for `make bench`, and logs the guest's side of them.
func recordTimings(t *testing.T, dir string, run *bootRun, fw qemu.Firmware, measured, console string) {
	t.Helper()
	b := qemu.BootTimings{Boot: run.name, Firmware: string(fw), Accelerator: run.accel, Measured: measured, PowerOnSeconds: qemu.Seconds(run.verdict)}
	b.Selftest(run.reports, console)
	if err := b.Write(dir); err != nil {
		t.Fatal(err)
	}
	unlock := "the guest's journal showed no crypt unit start and finish"
	if b.UnlockSeconds > 0 {
		unlock = fmt.Sprintf("the root's crypt unit started %.1f s after the kernel and took %.1f s", b.UnlockStartSeconds, b.UnlockSeconds)
	}
	t.Logf("%s: on the guest's clock: %s; multi-user.target at %.1f s; reports gathered at %.1f s", run.name, unlock, b.MultiUserSeconds, b.ReportsSeconds)
}

// selftestTimes picks the selftest's own timings off the console.
func selftestTimes(vm *qemu.VM) string {
	var out []string
	re := regexp.MustCompile(`gpuhost-selftest: ((scan host|drift) exited \d+ after \d+ s)`)
	vm.Lines(func(l string) {
		if m := re.FindStringSubmatch(l); m != nil {
			out = append(out, m[1])
		}
	})
	return strings.Join(out, ", ")
}

type logWriter struct {
	t    *testing.T
	name string
}

func (l logWriter) Write(p []byte) (int, error) {
	l.t.Logf("%s: %s", l.name, strings.TrimSpace(string(p)))
	return len(p), nil
}

// scrapeMetrics reads /metrics through the forwarded port while the
// selftest holds the guest up: with the token, trusting only the test CA
// that signed the agent's certificate, and once without the token.
func scrapeMetrics(t *testing.T, a *agentTLS, port int) (string, int) {
	t.Helper()
	url := fmt.Sprintf("https://127.0.0.1:%d/metrics", port)
	get := func(token string) (int, string, error) {
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := a.caClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		return resp.StatusCode, string(b), err
	}
	var lastErr error
	for range 30 {
		code, body, err := get(a.token)
		if err == nil && code == http.StatusOK {
			noToken, _, _ := get("")
			return body, noToken
		}
		lastErr = fmt.Errorf("status %d, %v", code, err)
		time.Sleep(time.Second)
	}
	t.Errorf("/metrics through 127.0.0.1:%d: %v", port, lastErr)
	return "", 0
}

// assertBoot checks what the issue asks of a booted host, from the
// selftest's reports.
func assertBoot(t *testing.T, run *bootRun, baseRef, baseDigest, rootUUID string) {
	t.Helper()
	r := run.reports
	text := func(name string) string { return strings.TrimSpace(string(r[name])) }

	units := parseUnits(text("units.txt"))
	t.Logf("%s: units active at (seconds since the kernel started): %s; the selftest's gathering (file, start, end): %s",
		run.name, unitTimes(text("units.txt")), strings.ReplaceAll(text("timings.txt"), "\n", "; "))
	for _, u := range []string{"containerd.service", "nftables.service", "gpuhost-agentd.service", "ssh.service", "systemd-networkd.service", "gpuhost-growroot.service"} {
		if units[u] != "active" {
			t.Errorf("%s: %s is %q", run.name, u, units[u])
		}
	}
	// Without a GPU, nvidia-persistenced has no driver to keep loaded.
	for _, l := range strings.Split(text("failed-units.txt"), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] != "nvidia-persistenced.service" {
			t.Errorf("%s: a unit failed: %s", run.name, l)
		}
	}

	cfg := text("containerd-config.toml")
	for _, want := range []string{"/etc/containerd/conf.d/99-zz-gpuhost.toml", "SystemdCgroup = true", `[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]`, `default_runtime_name = "runc"`} {
		if !strings.Contains(cfg, want) {
			t.Errorf("%s: containerd config dump lacks %q:\n%s", run.name, want, cfg)
		}
	}
	images := text("ctr-images.txt")
	if baseRef != "" && !(strings.Contains(images, baseRef) && strings.Contains(images, baseDigest)) {
		t.Errorf("%s: ctr -n k8s.io images ls does not list %s at %s:\n%s", run.name, baseRef, baseDigest, images)
	}

	if fs := text("cgroup-fs"); fs != "cgroup2fs" {
		t.Errorf("%s: /sys/fs/cgroup is %q, want cgroup2fs", run.name, fs)
	}
	cmdline := strings.Fields(text("cmdline"))
	for _, want := range []string{"systemd.unified_cgroup_hierarchy=1", "modprobe.blacklist=nouveau", "nouveau.modeset=0", "root=UUID=" + rootUUID} {
		if !slices.Contains(cmdline, want) {
			t.Errorf("%s: /proc/cmdline lacks %s: %v", run.name, want, cmdline)
		}
	}

	policy, ports, err := kernelInput(r["nft-ruleset.json"])
	if err != nil {
		t.Errorf("%s: the kernel's ruleset: %v", run.name, err)
	} else if policy != "drop" || !slices.Contains(ports, 22) || !slices.Contains(ports, 9108) {
		t.Errorf("%s: the kernel's input chain has policy %q and opens %v; want drop with 22 and 9108", run.name, policy, ports)
	}

	if id := text("machine-id"); !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) {
		t.Errorf("%s: /etc/machine-id is %q after boot", run.name, id)
	}
	if !strings.Contains(text("ssh-files.txt"), "ssh_host_ed25519_key") {
		t.Errorf("%s: no SSH host keys were made: %s", run.name, text("ssh-files.txt"))
	}
	root, _ := strconv.ParseInt(text("root-bytes"), 10, 64)
	disk, _ := strconv.ParseInt(text("disk-bytes"), 10, 64)
	// The root gets the disk but for the BIOS boot partition, the ESP,
	// /boot (512 MiB) and the LUKS2 header (16 MiB).
	if disk != 4<<30 || root < 3<<30+1<<28 {
		t.Errorf("%s: the root file system is %d bytes on a %d-byte disk; it did not grow to the disk", run.name, root, disk)
	}
}

// parseUnits reads `systemctl show -p Id -p ActiveState` output.
func parseUnits(s string) map[string]string {
	out := map[string]string{}
	id := ""
	for _, l := range strings.Split(s, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(l), "=")
		switch k {
		case "Id":
			id = v
		case "ActiveState":
			out[id] = v
		}
	}
	return out
}

// unitTimes lists when each unit of `systemctl show -p Id -p
// ActiveEnterTimestampMonotonic` output became active.
func unitTimes(s string) string {
	var out []string
	id := ""
	for _, l := range strings.Split(s, "\n") {
		k, v, _ := strings.Cut(strings.TrimSpace(l), "=")
		switch k {
		case "Id":
			id = v
		case "ActiveEnterTimestampMonotonic":
			if us, err := strconv.ParseInt(v, 10, 64); err == nil && us > 0 {
				out = append(out, fmt.Sprintf("%s %.1f", id, float64(us)/1e6))
			}
		}
	}
	return strings.Join(out, ", ")
}

// kernelInput reads `nft -j list ruleset`: the policy of the base chains
// on the input hook and the TCP ports their rules accept.
func kernelInput(data []byte) (string, []int, error) {
	var doc struct {
		Nftables []map[string]json.RawMessage `json:"nftables"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return "", nil, fmt.Errorf("%w: %s", err, data)
	}
	policy := ""
	inputChains := map[string]bool{}
	var ports []int
	for _, item := range doc.Nftables {
		if raw, ok := item["chain"]; ok {
			var c struct{ Family, Table, Name, Hook, Policy string }
			_ = json.Unmarshal(raw, &c)
			if c.Hook == "input" {
				policy = c.Policy
				inputChains[c.Family+"/"+c.Table+"/"+c.Name] = true
			}
		}
	}
	for _, item := range doc.Nftables {
		raw, ok := item["rule"]
		if !ok {
			continue
		}
		var rule struct {
			Family, Table, Chain string
			Expr                 []map[string]json.RawMessage
		}
		_ = json.Unmarshal(raw, &rule)
		if !inputChains[rule.Family+"/"+rule.Table+"/"+rule.Chain] {
			continue
		}
		accept := false
		var found []int
		for _, e := range rule.Expr {
			if _, ok := e["accept"]; ok {
				accept = true
			}
			if m, ok := e["match"]; ok && bytes.Contains(m, []byte(`"dport"`)) {
				var match struct {
					Right json.RawMessage `json:"right"`
				}
				_ = json.Unmarshal(m, &match)
				var one int
				var set struct {
					Set []int `json:"set"`
				}
				if json.Unmarshal(match.Right, &one) == nil {
					found = append(found, one)
				} else if json.Unmarshal(match.Right, &set) == nil {
					found = append(found, set.Set...)
				}
			}
		}
		if accept {
			ports = append(ports, found...)
		}
	}
	if policy == "" {
		return "", nil, fmt.Errorf("no base chain on the input hook: %s", data)
	}
	return policy, ports, nil
}
