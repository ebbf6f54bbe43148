package images

// The boot half of TestE2EDebian12: the baked disk booted in QEMU, scanned
// live from inside by gpuhost-selftest.service, and held against what the
// offline gate said of the same disk.

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/gpuhost/gpuhost/containers/seed/seedtest"
	"github.com/gpuhost/gpuhost/internal/qemu"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/reports"
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
	ca := testutil.NewCA(t)
	dir := t.TempDir()
	certPath, keyPath, _ := testutil.WriteCert(t, dir, testutil.CertSpec{CA: ca, DNS: []string{"debian-12-gpu", "localhost"}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
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
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), ServerName: "debian-12-gpu", MinVersion: tls.VersionTLS13}}}
	return &agentTLS{ca: ca, cert: cert, key: key, token: hex.EncodeToString(tok[:]), caClient: client}
}

// bootSelftest boots the disk through overlay (made on the first boot, the
// same host on the next) and returns what its selftest reported. With
// scrape, the selftest holds the machine up after writing its reports
// while /metrics is read through the forwarded port.
func bootSelftest(t *testing.T, name, disk, overlay, tpm string, fw qemu.Firmware, agent *agentTLS, scrape bool) *bootRun {
	t.Helper()
	dir := filepath.Join(filepath.Dir(overlay), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var waivers []byte
	for _, f := range []string{"waivers-debian-12.yaml", "waivers-qemu.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		waivers = append(append(waivers, b...), '\n')
	}
	inputs := map[string][]byte{"waivers.yaml": waivers}
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
		SelftestDisk: st, TPMState: tpm,
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

// liveVerdict checks the live scan and drift: at --fail-on high only what
// the booted host cannot pass honestly fails, the only waivers used cover
// hosts, and drift finds nothing changed since the bake.
func liveVerdict(t *testing.T, run *bootRun, wantFail []string) {
	t.Helper()
	waivedOK := []string{"GH-GPU-020", "GH-PIN-005", "GH-RT-001", "GH-RT-003"}
	code := strings.TrimSpace(string(run.reports["scan.rc"]))
	var failing, waived []string
	for _, r := range run.scan.Results {
		switch r.Status {
		case reports.StatusFail, reports.StatusError:
			failing = append(failing, r.ID)
			if !slices.Contains(wantFail, r.ID) {
				t.Errorf("%s: live %s %s (%s): %q", run.name, r.ID, r.Status, r.Severity, r.Messages)
			}
		case reports.StatusWaived:
			waived = append(waived, r.ID)
			if !slices.Contains(waivedOK, r.ID) {
				t.Errorf("%s: live %s is waived by %+v; only %v may be on a booted host", run.name, r.ID, r.Waiver, waivedOK)
			}
		}
	}
	wantCode := "0"
	if len(wantFail) > 0 {
		wantCode = "1"
	}
	if code != wantCode || !slices.Equal(sorted(failing), sorted(wantFail)) {
		t.Errorf("%s: gpuhost scan host --fail-on high exited %s failing %v; want %s failing exactly %v\n%s", run.name, code, failing, wantCode, wantFail, run.reports["scan.err"])
	}
	t.Logf("%s: live scan exit %s; summary %+v; waived %v", run.name, code, run.scan.Summary, sorted(waived))
	for _, r := range run.drift.Results {
		if (r.Status == reports.StatusFail || r.Status == reports.StatusError) && (strings.HasPrefix(r.ID, "GH-DRIFT-") || !slices.Contains(wantFail, r.ID)) {
			t.Errorf("%s: drift: %s %s: %q", run.name, r.ID, r.Status, r.Messages)
		}
	}
}

func sorted(s []string) []string { return slices.Sorted(slices.Values(s)) }

// verdict is a check's outcome with a waiver set aside: a waived check
// failed and was accepted.
func verdict(r reports.Result) string {
	if r.Status == reports.StatusWaived {
		return reports.StatusFail
	}
	return r.Status
}

// agreement compares, for every check that both the offline gate and the
// live scan evaluated (neither skipped it), the two verdicts. It logs the
// whole table and fails on any disagreement with check, offline, live and
// why.
func agreement(t *testing.T, offline, live reports.Report) {
	t.Helper()
	byID := map[string]reports.Result{}
	for _, r := range offline.Results {
		byID[r.ID] = r
	}
	var table, bad strings.Builder
	tw := tabwriter.NewWriter(&table, 2, 4, 2, ' ', 0)
	bw := tabwriter.NewWriter(&bad, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "check\toffline\tlive\tagree")
	fmt.Fprintln(bw, "check\toffline\tlive\twhy")
	both, disagree := 0, 0
	var liveOnly, offlineOnly []string
	for _, l := range slices.SortedFunc(slices.Values(live.Results), func(a, b reports.Result) int { return strings.Compare(a.ID, b.ID) }) {
		o, ok := byID[l.ID]
		switch {
		case ok && o.Status != reports.StatusSkip && l.Status == reports.StatusSkip:
			offlineOnly = append(offlineOnly, l.ID)
		case (!ok || o.Status == reports.StatusSkip) && l.Status != reports.StatusSkip:
			liveOnly = append(liveOnly, l.ID+" "+l.Status)
		}
		if !ok || o.Status == reports.StatusSkip || l.Status == reports.StatusSkip {
			continue
		}
		both++
		agree := verdict(o) == verdict(l)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%v\n", l.ID, o.Status, l.Status, agree)
		if !agree {
			disagree++
			fmt.Fprintf(bw, "%s\t%s\t%s\toffline: %s; live: %s\n", l.ID, o.Status, l.Status, strings.Join(o.Messages, "; "), strings.Join(l.Messages, "; "))
		}
	}
	tw.Flush()
	bw.Flush()
	t.Logf("offline gate against the live scan, %d checks both evaluated, %d disagree:\n%s"+
		"evaluated live only: %s\nevaluated offline only: %s", both, disagree, table.String(), strings.Join(liveOnly, ", "), strings.Join(offlineOnly, ", "))
	if disagree > 0 {
		t.Errorf("the offline gate and the live scan disagree on %d checks:\n%s", disagree, bad.String())
	}
	if both < 20 {
		t.Errorf("only %d checks were evaluated both offline and live", both)
	}
}

// bootPanics boots the image's own kernel with no root to mount: the
// kernel panics, and the boot must fail at once with the console.
func bootPanics(t *testing.T, kernel string) {
	t.Helper()
	vm, err := qemu.Start(context.Background(), qemu.Config{
		Kernel: kernel, Append: "console=ttyS0,115200n8 root=/dev/nonexistent rootwait=0 panic=0",
		Firmware: qemu.BIOS, Dir: t.TempDir(), MemoryMiB: 512, CPUs: 1, Log: logWriter{t, "panic"},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(vm.Stop)
	err = vm.Wait(context.Background(), 5*time.Minute)
	if err == nil {
		t.Fatal("a kernel with no root powered off cleanly")
	}
	if msg := err.Error(); !strings.Contains(msg, `"Kernel panic - not syncing" on the console`) || !strings.Contains(msg, "lines of the serial console") || !strings.Contains(msg, "VFS: Unable to mount root fs") {
		t.Errorf("the failure does not say the kernel panicked, with the console:\n%s", msg)
	}
	if !vm.Exited() {
		t.Error("qemu still runs after the panic")
	}
}

// sshHostKeys reads the host keys sshd offers through the forwarded port,
// as "type base64" lines.
func sshHostKeys(t *testing.T, port int) []string {
	t.Helper()
	keyscan, err := exec.LookPath("ssh-keyscan")
	if err != nil {
		t.Errorf("ssh-keyscan (Debian package openssh-client): %v", err)
		return nil
	}
	out := testutil.Run(t, time.Minute, keyscan, "-T", "20", "-p", strconv.Itoa(port), "127.0.0.1")
	return keyLines(out)
}

// keyLines returns the "type base64" of each public key line in s.
func keyLines(s string) []string {
	var keys []string
	for _, l := range strings.Split(s, "\n") {
		f := strings.Fields(l)
		if len(f) >= 3 && strings.HasPrefix(f[1], "ssh-") {
			// ssh-keyscan: host type key
			keys = append(keys, f[1]+" "+f[2])
		} else if len(f) >= 2 && strings.HasPrefix(f[0], "ssh-") || len(f) >= 2 && strings.HasPrefix(f[0], "ecdsa-") {
			keys = append(keys, f[0]+" "+f[1])
		} else if len(f) >= 3 && strings.HasPrefix(f[1], "ecdsa-") {
			keys = append(keys, f[1]+" "+f[2])
		}
	}
	return sorted(keys)
}

// seededBase is the container base the bake pre-seeds by digest.
type seededBase struct {
	registry, ref, digest string
}

// seedBase serves a small linux/amd64 image from an in-process registry on
// loopback, standing in for NGC: the bake pulls it by digest, and the
// booted host's first-boot import must list it at that digest.
func seedBase(t *testing.T) seededBase {
	t.Helper()
	reg := seedtest.New(t)
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		body := []byte("a base image pre-seeded by the gpuhost boot test\n")
		if err := tw.WriteHeader(&tar.Header{Name: "etc/gpuhost-base", Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(body); err != nil {
			return nil, err
		}
		if err := tw.Close(); err != nil {
			return nil, err
		}
		return io.NopCloser(&buf), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config.Cmd = []string{"/bin/true"}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	reg.Write(t, "gpuhost-test/base", "1", img)
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return seededBase{registry: reg.Host, ref: reg.Host + "/gpuhost-test/base:1", digest: d.String()}
}

// paramsWith writes the Debian 12 params with registry added to the
// registries bases may come from, for the gate and the booted host alike.
func paramsWith(t *testing.T, dir, registry string) string {
	t.Helper()
	data, err := os.ReadFile("params-debian-12.yaml")
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^allowed_registries: \[(.*)\]$`)
	if !re.Match(data) {
		t.Fatal("params-debian-12.yaml has no one-line allowed_registries list")
	}
	data = re.ReplaceAll(data, []byte(`allowed_registries: [$1, "`+registry+`"]`))
	p := filepath.Join(dir, "params.yaml")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// bootSelftestCLI is bootSelftest through `gpuhost boot --selftest`, as a
// user runs it: the same overlay, the same credentials, and the reports
// read from the directory the command writes.
func bootSelftestCLI(t *testing.T, gpuhost, name, disk, overlay, tpm string, fw qemu.Firmware, agent *agentTLS) *bootRun {
	t.Helper()
	dir := filepath.Join(filepath.Dir(overlay), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"token": []byte(agent.token), "agent.crt": agent.cert, "agent.key": agent.key}
	var waivers []byte
	for _, f := range []string{"waivers-debian-12.yaml", "waivers-qemu.yaml"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		waivers = append(append(waivers, b...), '\n')
	}
	files["waivers.yaml"] = waivers
	for f, b := range files {
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	reportDir := filepath.Join(dir, "reports")
	ctx, cancel := context.WithTimeout(context.Background(), selftestLimit+5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, gpuhost, "boot", disk, "--overlay", overlay, "--tpm-state", tpm, "--firmware", string(fw),
		"--selftest", reportDir, "--waivers", filepath.Join(dir, "waivers.yaml"), "--timeout", selftestLimit.String(),
		"--credential", "gpuhost.agent-token="+filepath.Join(dir, "token"),
		"--credential", "gpuhost.agent-tls-crt="+filepath.Join(dir, "agent.crt"),
		"--credential", "gpuhost.agent-tls-key="+filepath.Join(dir, "agent.key"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// gpuhost boot stops its QEMU on SIGTERM; the test's own handler
	// covers an interrupt of the test.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 30 * time.Second
	start := time.Now()
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: gpuhost boot: %v", name, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "console.txt"), stdout.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if code > 1 {
		t.Fatalf("%s: gpuhost boot exited %d:\n%s", name, code, stderr.String())
	}
	run := &bootRun{name: name, verdict: time.Since(start), reports: map[string][]byte{}}
	entries, err := os.ReadDir(reportDir)
	if err != nil {
		t.Fatalf("%s: %v\n%s", name, err, stderr.String())
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(reportDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		run.reports[e.Name()] = b
	}
	for file, into := range map[string]*reports.Report{"scan.json": &run.scan, "drift.json": &run.drift} {
		if err := json.Unmarshal(run.reports[file], into); err != nil {
			t.Fatalf("%s: %s: %v", name, file, err)
		}
	}
	if want := strings.TrimSpace(string(run.reports["scan.rc"])); strconv.Itoa(code) != want {
		t.Errorf("%s: gpuhost boot exited %d; the live scan's code is %s", name, code, want)
	}
	if !strings.Contains(stdout.String(), "live scan: ") || !strings.Contains(stdout.String(), "gpuhost-selftest: reports written") {
		t.Errorf("%s: gpuhost boot printed no live verdict or console:\n%.3000s", name, stdout.String())
	}
	for _, l := range strings.Split(stderr.String(), "\n") {
		if strings.HasPrefix(l, "qemu: ") || strings.HasPrefix(l, "gpuhost boot: ") {
			t.Logf("%s: %s", name, l)
			if strings.Contains(l, " on kvm ") {
				run.accel = "kvm"
			} else if strings.Contains(l, " on tcg ") {
				run.accel = "tcg"
			}
		}
	}
	t.Logf("%s: %s, %s: power on to power off through gpuhost boot %s", name, fw, run.accel, run.verdict.Round(time.Second))
	recordTimings(t, dir, run, fw, "power on to power off through gpuhost boot", stdout.String())
	return run
}
