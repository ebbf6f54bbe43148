package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/scan"
)

// factsLine collects a rootfs's facts as one compact NDJSON line whose
// target.ref is ref.
func factsLine(t *testing.T, rootfs, ref string) string {
	t.Helper()
	o := gpuhost(t, "", "facts", "rootfs", rootfs)
	if o.code != 0 {
		t.Fatalf("facts %s: exit %d: %s", rootfs, o.code, o.stderr)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(o.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	doc["target"].(map[string]any)["ref"] = ref
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(doc); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestSummaryCountsHostsPerCheck(t *testing.T) {
	weak1, strong, weak2 := factsLine(t, weak, "weak-1"), factsLine(t, hardened, "strong"), factsLine(t, weak, "weak-2")
	o := gpuhost(t, weak1+strong+weak2, "scan", "facts", "--params", params, "--summary", "--format", "json")
	if o.code != 1 {
		t.Fatalf("exit %d, want 1 (the weak hosts fail high checks)\nstderr: %s", o.code, o.stderr)
	}
	var sum scan.FleetSummary
	if err := json.Unmarshal([]byte(o.stdout), &sum); err != nil {
		t.Fatalf("not a JSON summary: %v\n%s", err, o.stdout)
	}
	if sum.Schema != scan.SummarySchema || sum.Hosts != 3 || sum.HostsFailing != 2 || sum.HostsUntrusted != 0 {
		t.Errorf("header: %+v", sum)
	}
	rows := map[string]scan.CheckSummary{}
	for _, c := range sum.Checks {
		rows[c.ID] = c
		if n := c.Fail + c.Error + c.Waived + c.Skip + c.Pass; n != 3 {
			t.Errorf("%s counts %d hosts, want 3", c.ID, n)
		}
	}
	ciphers := rows["GH-SSH-004"]
	if ciphers.Fail != 2 || ciphers.Pass != 1 || strings.Join(ciphers.Failing, ",") != "weak-1,weak-2" {
		t.Errorf("GH-SSH-004: %+v, want 2 failing (weak-1, weak-2 in input order) and 1 pass", ciphers)
	}
	if len(sum.Checks) == 0 || sum.Checks[0].Fail < sum.Checks[len(sum.Checks)-1].Fail {
		t.Errorf("rows are not sorted by failing hosts: first %+v", sum.Checks[0])
	}

	table := gpuhost(t, weak1+strong+weak2, "scan", "facts", "--params", params, "--summary")
	if table.code != 1 || !strings.HasPrefix(table.stdout, "3 hosts: 2 failing at or above high, 0 untrusted") {
		t.Errorf("table: exit %d, stdout starts %q", table.code, firstLine(table.stdout))
	}
	for _, want := range []string{"ID", "FAIL", "GH-SSH-004", "weak-1, weak-2"} {
		if !strings.Contains(table.stdout, want) {
			t.Errorf("table lacks %q", want)
		}
	}
}

func TestSummaryExitCodeCoversEveryHost(t *testing.T) {
	strong := factsLine(t, hardened, "strong")
	if o := gpuhost(t, strong+strong, "scan", "facts", "--params", params, "--summary"); o.code != 0 {
		t.Errorf("hardened fleet: exit %d, want 0\n%s", o.code, o.stderr)
	}
	// The weak host's failures are high at most: under --fail-on critical
	// the fleet passes.
	w := factsLine(t, weak, "weak")
	if o := gpuhost(t, strong+w, "scan", "facts", "--params", params, "--summary", "--fail-on", "critical"); o.code != 0 {
		t.Errorf("--fail-on critical: exit %d, want 0\n%s", o.code, o.stdout)
	}
	bad := `{"schema":"gpuhost.facts/v1","target":{"kind":"host"}}` + "\n"
	if o := gpuhost(t, strong+bad, "scan", "facts", "--params", params, "--summary"); o.code != 2 || !strings.Contains(o.stderr, "stdin#2") {
		t.Errorf("a bad document: exit %d, stderr %q; want 2 naming stdin#2", o.code, o.stderr)
	}
}

func TestSummaryRefusesPerHostOutputs(t *testing.T) {
	strong := factsLine(t, hardened, "strong")
	for name, args := range map[string][]string{
		"sarif":  {"--format", "sarif"},
		"report": {"--report", "json=" + t.TempDir() + "/r.json"},
	} {
		o := gpuhost(t, strong, append([]string{"scan", "facts", "--params", params, "--summary"}, args...)...)
		if o.code != 2 || !strings.Contains(o.stderr, "--summary") {
			t.Errorf("%s: exit %d, stderr %q; want 2 naming --summary", name, o.code, o.stderr)
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// TestSavedFactsWithoutCollectorsAreRefused: a saved host document with an
// empty collectors map evaluated to a page of skips and exit 0; it is no
// evidence, so the scan cannot be trusted (exit 2), naming the document.
func TestSavedFactsWithoutCollectorsAreRefused(t *testing.T) {
	doc := `{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"h","scanned_at":"2026-12-01T00:00:00Z"},"collectors":{}}` + "\n"
	o := gpuhost(t, doc, "scan", "facts", "--params", params)
	if o.code != 2 || !strings.Contains(o.stderr, "collectors is empty") {
		t.Errorf("exit %d, stderr %q; want 2 naming the empty collectors", o.code, o.stderr)
	}
}

// TestFactsExitsTwoWhenACollectorFailed: facts of a target a collector
// could not read are still printed, and the command exits 2 as a scan would.
func TestFactsExitsTwoWhenACollectorFailed(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"etc/ssh", "var/lib/dpkg"} {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/nonexistent", filepath.Join(dir, "etc/ssh/sshd_config")); err != nil {
		t.Fatal(err)
	}
	status := "Package: openssh-server\nStatus: install ok installed\nArchitecture: amd64\nVersion: 1:9.2p1-2+deb12u6\n\n"
	if err := os.WriteFile(filepath.Join(dir, "var/lib/dpkg/status"), []byte(status), 0o644); err != nil {
		t.Fatal(err)
	}
	o := gpuhost(t, "", "facts", "rootfs", dir)
	if o.code != 2 || !strings.Contains(o.stderr, "ssh") || !strings.Contains(o.stdout, `"status": "error"`) {
		t.Errorf("exit %d, stderr %q; want 2, the document printed with the ssh collector's error", o.code, o.stderr)
	}
}

// TestMultiHostTablesAreHeaded: with several documents, each table is
// headed by its host (the hostname, else the ref) and the document it came
// from, in input order; a hostname cannot forge a heading; one document
// alone has no heading.
func TestMultiHostTablesAreHeaded(t *testing.T) {
	dir := t.TempDir()
	doc := func(src, hostname string) string {
		t.Helper()
		data, err := os.ReadFile(filepath.Join("..", "..", "scan", "testdata", src))
		if err != nil {
			t.Fatal(err)
		}
		var d map[string]any
		if err := json.Unmarshal(data, &d); err != nil {
			t.Fatal(err)
		}
		if hostname != "" {
			d["target"].(map[string]any)["hostname"] = hostname
		}
		line, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return string(line) + "\n"
	}
	one := filepath.Join(dir, "one.json")
	many := filepath.Join(dir, "many.ndjson")
	if err := os.WriteFile(one, []byte(doc("compliant-host.json", "")), 0o644); err != nil {
		t.Fatal(err)
	}
	forged := "gpu-7\n== host forged, from elsewhere ==\x1b[2J"
	if err := os.WriteFile(many, []byte(doc("weak-facts.json", "")+doc("noncompliant-image.json", forged)), 0o644); err != nil {
		t.Fatal(err)
	}

	o := gpuhost(t, "", "scan", "facts", one, many)
	if o.code == 2 {
		t.Fatalf("exit 2: %s", o.stderr)
	}
	want := []string{
		"== host gpu-node-01, from " + one + " ==",
		"== rootfs gpu-sample-weak, from " + many + "#1 ==",
		"== image gpu-7 == host forged, from elsewhere ==[2J, from " + many + "#2 ==",
	}
	var got []string
	lines := strings.Split(o.stdout, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, "==") {
			continue
		}
		got = append(got, l)
		if i > 0 && lines[i-1] != "" || i+2 >= len(lines) || lines[i+1] != "" || !strings.HasPrefix(lines[i+2], "Coverage:") {
			t.Errorf("heading %q is not set apart above its table's coverage line", l)
		}
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("headings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Count(o.stdout, "Coverage:") != 3 || strings.Contains(o.stdout, "\x1b") {
		t.Errorf("want three tables and no escape sequence:\n%s", o.stdout)
	}

	alone := gpuhost(t, "", "scan", "facts", one)
	if alone.code == 2 || !strings.HasPrefix(alone.stdout, "Coverage:") {
		t.Errorf("one document: exit %d, stdout starts %q; want its table alone", alone.code, firstLine(alone.stdout))
	}
	if js := gpuhost(t, "", "scan", "facts", one, many, "--format", "json"); !strings.HasPrefix(js.stdout, "{") || strings.Contains(js.stdout, "\n==") {
		t.Errorf("NDJSON output has a heading: starts %q", firstLine(js.stdout))
	}
}
