package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/render/report"
	"github.com/gpuhost/gpuhost/reports"
)

const (
	hardened = "testdata/rootfs-hardened"
	weak     = "testdata/rootfs-weak"
	params   = "testdata/params-demo.yaml"
)

type outcome struct {
	code           int
	stdout, stderr string
}

func gpuhost(t *testing.T, stdin string, args ...string) outcome {
	t.Helper()
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := run(ctx, args, strings.NewReader(stdin), &out, &errOut)
	return outcome{code, out.String(), errOut.String()}
}

func jsonReport(t *testing.T, o outcome) *reports.Report {
	t.Helper()
	var rep reports.Report
	if err := json.Unmarshal([]byte(o.stdout), &rep); err != nil {
		t.Fatalf("stdout is not a JSON report: %v\nstdout: %s\nstderr: %s", err, o.stdout, o.stderr)
	}
	return &rep
}

func statuses(rep *reports.Report) map[string]string {
	m := map[string]string{}
	for _, r := range rep.Results {
		m[r.ID] = r.Status
	}
	return m
}

func TestWeakRootfsFailsTLSSSHAndRuntime(t *testing.T) {
	o := gpuhost(t, "", "scan", "rootfs", weak, "--params", params, "--format", "json")
	if o.code != 1 {
		t.Fatalf("exit %d, want 1\nstderr: %s", o.code, o.stderr)
	}
	rep := jsonReport(t, o)
	failed := map[string]bool{}
	for _, r := range rep.Results {
		if r.Status == reports.StatusFail {
			failed[strings.Join(strings.Split(r.ID, "-")[:2], "-")+"-"] = true
		}
	}
	for _, prefix := range []string{"GH-TLS-", "GH-SSH-", "GH-RT-", "GH-PIN-", "GH-CGR-", "GH-ENC-", "GH-NET-"} {
		if !failed[prefix] {
			t.Errorf("no failure under %s; results: %v", prefix, statuses(rep))
		}
	}
	if rep.Schema != reports.Schema || rep.Target.Kind != "rootfs" || !strings.HasPrefix(rep.PolicyDigest, "sha256:") || !strings.HasPrefix(rep.FactsDigest, "sha256:") {
		t.Errorf("report header incomplete: %+v", rep)
	}
}

// TestHardenedRootfsPasses: every TLS, sshd and runtime check that applies
// to a rootfs passes; only GH-SSH-007, which compares sshd's file with what
// the running daemon offers on the wire, has nothing to compare on an image.
func TestHardenedRootfsPasses(t *testing.T) {
	// The CIS file checks are left out: they judge owners and modes, which
	// git does not keep (TestReportsStayTheSame says more).
	o := gpuhost(t, "", "scan", "rootfs", hardened, "--params", params, "--format", "json", "--fail-on", "info", "--skip-checks", "fs")
	if o.code != 0 {
		t.Fatalf("exit %d, want 0\nstdout: %s\nstderr: %s", o.code, o.stdout, o.stderr)
	}
	for _, r := range jsonReport(t, o).Results {
		if r.OutOfScope || r.ID == "GH-SSH-007" {
			continue
		}
		if strings.HasPrefix(r.ID, "GH-TLS-") || strings.HasPrefix(r.ID, "GH-SSH-") || strings.HasPrefix(r.ID, "GH-RT-") {
			if r.Status != reports.StatusPass {
				t.Errorf("%s is %s on the hardened rootfs, want pass: %q", r.ID, r.Status, r.Messages)
			}
		}
	}
}

// hostileRootfs plants what an untrusted image can: links at host secrets,
// a FIFO where a config file should be, a link loop and a sparse 4 GB file.
func hostileRootfs(t *testing.T) string {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"etc/ssh", "etc/nginx", "etc/ssl", "var/lib/dpkg", "etc/containerd", "usr/lib"} {
		must(os.MkdirAll(filepath.Join(dir, d), 0o755))
	}
	must(os.Symlink("/etc/hostname", filepath.Join(dir, "etc/hostname")))
	must(os.Symlink("/etc/passwd", filepath.Join(dir, "etc/ssh/sshd_config")))
	must(os.Symlink("../../../../../../../../etc/os-release", filepath.Join(dir, "etc/os-release")))
	must(os.Symlink("/proc/self/environ", filepath.Join(dir, "etc/ssl/openssl.cnf")))
	must(syscall.Mkfifo(filepath.Join(dir, "etc/nginx/nginx.conf"), 0o644))
	must(os.Symlink("fstab.b", filepath.Join(dir, "etc/fstab")))
	must(os.Symlink("fstab", filepath.Join(dir, "etc/fstab.b")))
	f, err := os.Create(filepath.Join(dir, "var/lib/dpkg/status"))
	must(err)
	must(f.Truncate(4 << 30))
	must(f.Close())
	must(os.WriteFile(filepath.Join(dir, "etc/containerd/config.toml"), []byte("version = 2\n[plugins\x00\x01garbage"), 0o644))
	return dir
}

func TestHostileRootfsNeverPassesNorLeaks(t *testing.T) {
	dir := hostileRootfs(t)
	start := time.Now()
	o := gpuhost(t, "", "scan", "rootfs", dir, "--format", "json")
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("scan took %s; a hostile tree must not stall it", took)
	}
	if o.code != 1 && o.code != 2 {
		t.Fatalf("exit %d, want 1 or 2\nstderr: %s", o.code, o.stderr)
	}
	rep := jsonReport(t, o)
	st := statuses(rep)
	for _, id := range []string{"GH-SSH-001", "GH-TLS-002", "GH-PIN-001", "GH-RT-002"} {
		if st[id] == reports.StatusPass {
			t.Errorf("%s passed on a hostile tree whose facts could not be read", id)
		}
	}
	// Nothing from the host may surface: not its hostname, not its users.
	host, _ := os.Hostname()
	passwd, _ := os.ReadFile("/etc/passwd")
	firstUser := strings.SplitN(string(passwd), "\n", 2)[0]
	for _, leak := range []string{firstUser, "root:x:0:0", "PATH=" + os.Getenv("PATH")} {
		if leak != "" && (strings.Contains(o.stdout, leak) || strings.Contains(o.stderr, leak)) {
			t.Errorf("output contains host data %q", leak)
		}
	}
	if host != "" && rep.Target.Hostname == host {
		t.Errorf("target hostname %q came from the host", host)
	}
}

func TestSavedFactsRoundTrip(t *testing.T) {
	o := gpuhost(t, "", "facts", "rootfs", weak)
	if o.code != 0 {
		t.Fatalf("facts: exit %d: %s", o.code, o.stderr)
	}
	file := filepath.Join(t.TempDir(), "facts.json")
	if err := os.WriteFile(file, []byte(o.stdout), 0o644); err != nil {
		t.Fatal(err)
	}
	direct := jsonReport(t, gpuhost(t, "", "scan", "rootfs", weak, "--format", "json"))
	saved := gpuhost(t, "", "scan", "facts", file, "--format", "json")
	if saved.code != 1 {
		t.Fatalf("scan facts: exit %d: %s", saved.code, saved.stderr)
	}
	if a, b := statuses(direct), statuses(jsonReport(t, saved)); len(a) != len(b) {
		t.Fatalf("saved facts gave %d results, direct scan %d", len(b), len(a))
	} else {
		for id := range a {
			if a[id] != b[id] {
				t.Errorf("%s: direct %s, from saved facts %s", id, a[id], b[id])
			}
		}
	}

	// Many documents on stdin as NDJSON: one report per line, in order.
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(o.stdout)); err != nil {
		t.Fatal(err)
	}
	line := compact.String() + "\n"
	many := gpuhost(t, strings.Repeat(line, 5), "scan", "facts", "--format", "json")
	if many.code != 1 {
		t.Fatalf("NDJSON: exit %d: %s", many.code, many.stderr)
	}
	if n := strings.Count(strings.TrimSpace(many.stdout), "\n") + 1; n != 5 {
		t.Errorf("NDJSON: %d report lines, want 5", n)
	}
	// Each line is the json report of that document scanned alone, only
	// without its indentation: the stream's encoder and the json renderer
	// agree. (The same bytes go in, since facts_digest is their digest.)
	var one bytes.Buffer
	if err := json.Compact(&one, []byte(gpuhost(t, line, "scan", "facts", "--format", "json").stdout)); err != nil {
		t.Fatal(err)
	}
	for i, got := range strings.SplitAfter(many.stdout, "\n")[:5] {
		if got != one.String()+"\n" {
			t.Errorf("NDJSON line %d differs from the json report:\n got %s\nwant %s", i+1, got, one.String())
		}
	}

	bad := gpuhost(t, line+`{"schema":"gpuhost.facts/v1","target":{"kind":"host"}}`+"\n", "scan", "facts", "--format", "json")
	if bad.code != 2 || !strings.Contains(bad.stderr, "stdin#2") {
		t.Errorf("a bad second document: exit %d, stderr %q; want 2 naming stdin#2", bad.code, bad.stderr)
	}
}

func TestWaivers(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "waivers.yaml")
	write := func(expires string) {
		w := "- id: GH-SSH-001\n  target: \"rootfs-weak\"\n  justification: break-glass access on the lab image\n  approved_by: security@example.com\n  ticket: SEC-1\n  expires: " + expires + "\n"
		if err := os.WriteFile(file, []byte(w), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(time.Now().AddDate(0, 1, 0).Format("2006-01-02"))
	rep := jsonReport(t, gpuhost(t, "", "scan", "rootfs", weak, "--waivers", file, "--format", "json"))
	for _, r := range rep.Results {
		if r.ID == "GH-SSH-001" && (r.Status != reports.StatusWaived || r.Waiver == nil || r.Waiver.ApprovedBy != "security@example.com") {
			t.Errorf("live waiver: %+v", r)
		}
	}
	write(time.Now().AddDate(0, 0, -2).Format("2006-01-02"))
	rep = jsonReport(t, gpuhost(t, "", "scan", "rootfs", weak, "--waivers", file, "--format", "json"))
	for _, r := range rep.Results {
		if r.ID == "GH-SSH-001" && (r.Status != reports.StatusFail || r.Waiver == nil || !r.Waiver.Expired) {
			t.Errorf("expired waiver: %+v", r)
		}
	}
	if err := os.WriteFile(file, []byte("- id: GH-SSH-001\n  target: x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if o := gpuhost(t, "", "scan", "rootfs", weak, "--waivers", file); o.code != 2 || !strings.Contains(o.stderr, "approved_by is required") {
		t.Errorf("incomplete waiver: exit %d, stderr %q", o.code, o.stderr)
	}
}

func TestEveryReportFormatIsWritten(t *testing.T) {
	dir := t.TempDir()
	// With a profile judged, so that the xccdf format has rules to write.
	args := []string{"scan", "rootfs", weak, "--format", "table", "--compliance", "cis-ubuntu-22.04-l1-server"}
	for _, f := range report.Formats() {
		args = append(args, "--report", f+"="+filepath.Join(dir, "r."+f))
	}
	if o := gpuhost(t, "", args...); o.code != 1 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	for _, f := range report.Formats() {
		info, err := os.Stat(filepath.Join(dir, "r."+f))
		if err != nil || info.Size() == 0 {
			t.Errorf("%s report: %v", f, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != len(report.Formats()) {
		t.Errorf("%d files in the report dir, want %d (temp files left behind?)", len(entries), len(report.Formats()))
	}
}

func TestUntrustedInputsExit2(t *testing.T) {
	badPolicy := t.TempDir()
	if err := os.WriteFile(filepath.Join(badPolicy, "x.rego"), []byte("package gpuhost.tls.x\n\ndeny contains m if {\n  m := \n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		args []string
		want string
	}{
		"policy compile error": {[]string{"scan", "rootfs", hardened, "--policy", badPolicy}, "x.rego:"},
		"bad fail-on":          {[]string{"scan", "rootfs", hardened, "--fail-on", "severe"}, "--fail-on"},
		"unknown format":       {[]string{"scan", "rootfs", hardened, "--format", "pdf"}, `"--format" flag: want one of github, html,`},
		"unknown report":       {[]string{"scan", "rootfs", hardened, "--report", "pdf=x.pdf"}, "unknown report format"},
		"report without path":  {[]string{"scan", "rootfs", hardened, "--report", "sarif"}, "want FORMAT=PATH"},
		"bad diff format":      {[]string{"report", "diff", "a.json", "b.json", "--format", "pdf"}, `"--format" flag: want one of table,`},
		"bad verify fail-on":   {[]string{"verify", "example.com/x", "--fail-on", "severe"}, `"--fail-on" flag: want one of critical,`},
		"missing rootfs":       {[]string{"scan", "rootfs", "/nonexistent/rootfs"}, "/nonexistent/rootfs"},
		"missing params":       {[]string{"scan", "rootfs", hardened, "--params", "/nonexistent.yaml"}, "--params"},
		"unknown command":      {[]string{"scna"}, "unknown command"},
	} {
		if tc.args[0] == "verify" && !fullBuild {
			continue // the lean build has no verify command
		}
		o := gpuhost(t, "", tc.args...)
		if o.code != 2 || !strings.Contains(o.stderr, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", name, o.code, o.stderr, tc.want)
		}
	}
}

func TestPolicyCommands(t *testing.T) {
	o := gpuhost(t, "", "policy", "list")
	if o.code != 0 || !strings.Contains(o.stdout, "GH-SSH-001") || !strings.Contains(o.stdout, "iam/sudo_log.rego") {
		t.Errorf("policy list: exit %d\n%s", o.code, o.stdout)
	}
	o = gpuhost(t, "", "policy", "test", "--fail-under", "90")
	if o.code != 0 || !strings.Contains(o.stdout, "policy coverage") {
		t.Errorf("policy test: exit %d\n%s%s", o.code, o.stdout, o.stderr)
	}
	o = gpuhost(t, "", "version")
	if o.code != 0 || !strings.HasPrefix(o.stdout, "gpuhost ") {
		t.Errorf("version: %q", o.stdout)
	}
}

// TestFailOnSkip: the hardened rootfs fails nothing at high, but its CVE
// check (critical) cannot run without a vulnerability DB. The report says so
// in its coverage, and --fail-on-skip critical turns that into exit 1.
func TestFailOnSkip(t *testing.T) {
	o := gpuhost(t, "", "scan", "rootfs", hardened, "--params", params, "--format", "json")
	if o.code != 0 {
		t.Fatalf("without --fail-on-skip: exit %d\n%s", o.code, o.stderr)
	}
	rep := jsonReport(t, o)
	var gap *reports.Gap
	for i := range rep.Coverage.Gaps {
		if rep.Coverage.Gaps[i].ID == "GH-SC-001" {
			gap = &rep.Coverage.Gaps[i]
		}
	}
	if gap == nil || gap.Severity != "critical" || gap.Status != reports.StatusSkip || !strings.Contains(gap.Reason, "vulnerabilities") {
		t.Fatalf("coverage does not name the skipped CVE check: %+v", rep.Coverage)
	}
	if rep.Coverage.Evaluated >= rep.Coverage.Checks || rep.Coverage.NotEvaluated["critical"] < 1 {
		t.Errorf("coverage counts: %+v", rep.Coverage)
	}
	for _, r := range rep.Results {
		if r.OutOfScope && slices.ContainsFunc(rep.Coverage.Gaps, func(g reports.Gap) bool { return g.ID == r.ID }) {
			t.Errorf("%s does not apply to a rootfs but is counted as a gap", r.ID)
		}
	}
	if o := gpuhost(t, "", "scan", "rootfs", hardened, "--params", params, "--fail-on-skip", "critical"); o.code != 1 {
		t.Errorf("--fail-on-skip critical: exit %d, want 1\n%s", o.code, o.stderr)
	}
	if o := gpuhost(t, "", "scan", "rootfs", hardened, "--params", params, "--fail-on-skip", "severe"); o.code != 2 || !strings.Contains(o.stderr, "--fail-on-skip") {
		t.Errorf("a bad --fail-on-skip: exit %d, stderr %q", o.code, o.stderr)
	}
}

// TestCLIHabits: --version answers like the version command, with a real
// version; a missing argument or an unknown flag names the command and its
// help; and
// --trivy-db is offered only where facts are collected.
func TestCLIHabits(t *testing.T) {
	v := gpuhost(t, "", "--version")
	if v.code != 0 || !strings.HasPrefix(v.stdout, "gpuhost ") || strings.Contains(v.stdout, "dev") {
		t.Errorf("--version: exit %d %q %q", v.code, v.stdout, v.stderr)
	}
	if cmd := gpuhost(t, "", "version"); cmd.stdout != v.stdout {
		t.Errorf("version says %q, --version %q", cmd.stdout, v.stdout)
	}
	for _, args := range [][]string{{"scan", "rootfs"}, {"facts", "image"}, {"scan", "rootfs", "x", "--no-such-flag"}} {
		o := gpuhost(t, "", args...)
		if o.code != 2 || !strings.HasPrefix(o.stderr, "gpuhost "+args[0]+" "+args[1]+": ") || !strings.Contains(o.stderr, "'gpuhost "+args[0]+" "+args[1]+" --help'") {
			t.Errorf("%v: exit %d, want 2 naming the command and its help:\n%s", args, o.code, o.stderr)
		}
	}
	for _, args := range [][]string{{"history", "--help"}, {"policy", "test", "--help"}, {"report", "diff", "--help"}} {
		if o := gpuhost(t, "", args...); strings.Contains(o.stdout, "--trivy-db") {
			t.Errorf("%v offers --trivy-db, which it ignores", args)
		}
	}
	if fullBuild {
		for _, args := range [][]string{{"scan", "rootfs", "--help"}, {"facts", "host", "--help"}, {"agent", "--help"}, {"drift", "--help"}} {
			if o := gpuhost(t, "", args...); !strings.Contains(o.stdout, "--trivy-db") {
				t.Errorf("%v does not offer --trivy-db", args)
			}
		}
	}
}
