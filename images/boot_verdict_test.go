package images

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/gpuhost/gpuhost/containers/seed/seedtest"
	"github.com/gpuhost/gpuhost/internal/qemu"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/reports"
)

// liveVerdict checks the live scan and drift: at --fail-on high only what
// the booted host cannot pass honestly fails, the only waivers used cover
// hosts, and drift finds nothing changed since the bake.
func liveVerdict(t *testing.T, run *bootRun, wantFail []string) {
	t.Helper()
	waivedOK := []string{"GH-GPU-020", "GH-PIN-005", "GH-RT-001", "GH-RT-003", "GH-TLS-008"}
	code := strings.TrimSpace(string(run.reports["scan.rc"]))
	var failing, waived, baseline []string
	for _, r := range run.scan.Results {
		// The CIS baseline's packages and services below high: the bake
		// does not install them yet (issue 50), so a booted image fails
		// them; they are listed, and leave the gate at fail_on high alone.
		if cisBaseline(r) {
			if r.Status == reports.StatusFail {
				baseline = append(baseline, r.ID)
			}
			continue
		}
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
	t.Logf("%s: live scan exit %s; summary %+v; waived %v; CIS baseline failing %v", run.name, code, run.scan.Summary, sorted(waived), sorted(baseline))
	// Drift judges the pack too: the CIS baseline's packages fail there as
	// in the scan, and are listed there.
	for _, r := range run.drift.Results {
		if cisBaseline(r) {
			continue
		}
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
	img := seedtest.Base(t, seedtest.Bookworm)
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
// user runs it: the same overlay, the same credentials, the live scan
// judged with waivers (bootWaivers), and the reports read from the
// directory the command writes.
func bootSelftestCLI(t *testing.T, gpuhost, name, disk, overlay, tpm string, fw qemu.Firmware, agent *agentTLS, waivers []byte) *bootRun {
	t.Helper()
	dir := filepath.Join(filepath.Dir(overlay), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"token": []byte(agent.token), "agent.crt": agent.cert, "agent.key": agent.key}
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

// cisBaseline reports whether r is a check of the CIS baseline below high
// that the bake does not answer yet: the packages and services it asks for
// (AIDE, a time daemon, rsyslog, cron), which the templates do not install
// (issue 50). The image tests list their failures rather than hold an
// image to them, and the templates' gates at fail_on high leave them
// alone. The rest of the baseline (login.defs, kernel modules and
// parameters, core dumps, file modes) is the hardening's, and held.
func cisBaseline(r reports.Result) bool {
	return strings.HasPrefix(r.ID, "GH-PKG-") && reports.SeverityRank(r.Severity) > reports.SeverityRank("high")
}
