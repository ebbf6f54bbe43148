package engine

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/reports"
)

const portsPolicy = `# METADATA
# title: Only allowed ports listen
# custom:
#   id: GH-NET-901
#   severity: high
#   remediation: Close it.
#   controls:
#     nist-800-53: [CM-7]
#   targets: [host]
#   requires: [network]
package gpuhost.net.ports

deny contains msg if {
	some l in input.network.listening
	not l.port in data.gpuhost.params.allowed_ports
	msg := sprintf("port %d is listening", [l.port])
}
`

const sshPolicy = `# METADATA
# title: No root login
# custom:
#   id: GH-SSH-901
#   severity: medium
#   remediation: Set PermitRootLogin no.
#   controls:
#     nist-800-53: [AC-17]
#   targets: [host, rootfs]
#   requires: [ssh]
package gpuhost.ssh.root

deny contains "root login allowed" if input.ssh.permit_root_login == "yes"

skip contains "sshd listens nowhere" if input.ssh.disabled
`

// brokenAtRuntime compiles, but fails under strict builtin errors.
const brokenAtRuntime = `# METADATA
# title: Broken
# custom:
#   id: GH-SSH-902
#   severity: low
#   remediation: none
#   controls:
#     nist-800-53: [AC-17]
#   targets: [host]
#   requires: []
package gpuhost.ssh.broken

deny contains msg if {
	n := to_number(input.ssh.permit_root_login)
	msg := sprintf("%v", [n])
}
`

func newEngine(t *testing.T, files map[string]string, params map[string]any) *Engine {
	t.Helper()
	return newEngineWith(t, files, WithParams(params))
}

// newEngineWith compiles the given policy files with further options.
func newEngineWith(t *testing.T, files map[string]string, opts ...Option) *Engine {
	t.Helper()
	fsys := fstest.MapFS{}
	for k, v := range files {
		fsys[k] = &fstest.MapFile{Data: []byte(v)}
	}
	src, err := LoadFS(fsys, "test")
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(context.Background(), append([]Option{WithSource(src)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func doc(t *testing.T, js string) *Document {
	t.Helper()
	d, err := ParseDocument([]byte(js), "test")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func byID(rs []reports.Result) map[string]reports.Result {
	m := map[string]reports.Result{}
	for _, r := range rs {
		m[r.ID] = r
	}
	return m
}

func TestEvaluate(t *testing.T) {
	e := newEngine(t, map[string]string{
		"net/ports.rego":      portsPolicy,
		"ssh/root.rego":       sshPolicy,
		"ssh/root_test.rego":  "package gpuhost.ssh.root_test\n\ntest_x if true\n",
		"params.default.yaml": "allowed_ports: [22]\n",
	}, map[string]any{"allowed_ports": []any{22, 443}})

	host := `{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"h1","scanned_at":"x"},
	  "collectors":{"network":{"status":"ok"},"ssh":{"status":"ok"}},
	  "network":{"listening":[{"port":22},{"port":443},{"port":8080}]},
	  "ssh":{"permit_root_login":"yes"}}`
	got := byID(mustEval(t, e, doc(t, host)))
	if r := got["GH-NET-901"]; r.Status != reports.StatusFail || len(r.Messages) != 1 || r.Messages[0] != "port 8080 is listening" {
		t.Errorf("ports: got %+v", r)
	}
	if r := got["GH-SSH-901"]; r.Status != reports.StatusFail {
		t.Errorf("ssh: got %+v", r)
	}
	if r := got["GH-NET-901"]; r.Controls["nist-800-53"][0] != "CM-7" || r.Remediation != "Close it." {
		t.Errorf("metadata not carried: %+v", r)
	}

	rootfs := `{"schema":"gpuhost.facts/v1","target":{"kind":"rootfs","ref":"/r","scanned_at":"x"},
	  "collectors":{"network":{"status":"not_applicable","reason":"offline"},"ssh":{"status":"ok"}},
	  "ssh":{"permit_root_login":"no","disabled":true}}`
	got = byID(mustEval(t, e, doc(t, rootfs)))
	if r := got["GH-NET-901"]; r.Status != reports.StatusSkip || !strings.Contains(r.Messages[0], "not applicable to rootfs") {
		t.Errorf("target filter: got %+v", r)
	}
	if r := got["GH-SSH-901"]; r.Status != reports.StatusSkip || r.Messages[0] != "sshd listens nowhere" {
		t.Errorf("skip rule: got %+v", r)
	}
}

func mustEval(t *testing.T, e *Engine, d *Document) []reports.Result {
	t.Helper()
	rs, err := e.Evaluate(context.Background(), d)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func TestCollectorStatusGatesChecks(t *testing.T) {
	e := newEngine(t, map[string]string{"net/ports.rego": portsPolicy}, map[string]any{"allowed_ports": []any{22}})
	for status, want := range map[string]string{
		"unavailable":    reports.StatusSkip,
		"not_applicable": reports.StatusSkip,
		"error":          reports.StatusError,
	} {
		d := doc(t, `{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"h","scanned_at":"x"},
		  "collectors":{"network":{"status":"`+status+`","reason":"why"}},
		  "network":{"listening":[{"port":9}]}}`)
		r := mustEval(t, e, d)[0]
		if r.Status != want || !strings.Contains(r.Messages[0], "why") {
			t.Errorf("collector %s: got %s %v, want %s with the reason", status, r.Status, r.Messages, want)
		}
	}
	// A collector that did not report at all never lets a check pass.
	d := doc(t, `{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"h","scanned_at":"x"},"collectors":{}}`)
	if r := mustEval(t, e, d)[0]; r.Status != reports.StatusSkip {
		t.Errorf("missing collector: got %s", r.Status)
	}
}

func TestRuntimeErrorIsIsolatedToItsCheck(t *testing.T) {
	e := newEngine(t, map[string]string{
		"ssh/root.rego":   sshPolicy,
		"ssh/broken.rego": brokenAtRuntime,
	}, nil)
	d := doc(t, `{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"h","scanned_at":"x"},
	  "collectors":{"ssh":{"status":"ok"}},"ssh":{"permit_root_login":"yes"}}`)
	got := byID(mustEval(t, e, d))
	if r := got["GH-SSH-902"]; r.Status != reports.StatusError || !strings.Contains(r.Messages[0], "ssh/broken.rego") {
		t.Errorf("broken check: got %+v", r)
	}
	if r := got["GH-SSH-901"]; r.Status != reports.StatusFail {
		t.Errorf("healthy check next to a broken one: got %+v", r)
	}
}

// A deny or skip message that is not a string is reported as its JSON text,
// so a policy author's mistake still shows what the rule produced.
func TestNonStringMessagesAreJSON(t *testing.T) {
	e := newEngine(t, map[string]string{"ssh/odd.rego": `# METADATA
# title: Odd messages
# custom:
#   id: GH-SSH-903
#   severity: low
#   remediation: none
#   controls:
#     nist-800-53: [AC-17]
#   targets: [host]
#   requires: [ssh]
package gpuhost.ssh.odd

deny contains {"port": 22, "why": ["a", 1.5]} if input.ssh.permit_root_login == "yes"

deny contains 7 if input.ssh.permit_root_login == "yes"
`}, nil)
	d := doc(t, `{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"h","scanned_at":"x"},
	  "collectors":{"ssh":{"status":"ok"}},"ssh":{"permit_root_login":"yes"}}`)
	r := mustEval(t, e, d)[0]
	want := []string{"7", `{"port":22,"why":["a",1.5]}`}
	if r.Status != reports.StatusFail || strings.Join(r.Messages, "|") != strings.Join(want, "|") {
		t.Errorf("got %s %q, want fail %q", r.Status, r.Messages, want)
	}
}

func TestCompileErrorNamesFileAndLine(t *testing.T) {
	fsys := fstest.MapFS{"tls/bad.rego": {Data: []byte("package gpuhost.tls.bad\n\ndeny contains x if {\n  x := input.a +\n}\n")}}
	src, err := LoadFS(fsys, "test")
	if err != nil {
		t.Fatal(err)
	}
	_, err = New(context.Background(), WithSource(src))
	var ce *CompileError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "tls/bad.rego:") {
		t.Fatalf("got %v, want a CompileError naming tls/bad.rego:LINE", err)
	}
}

func TestMetadataProblemsAreCompileErrors(t *testing.T) {
	noSeverity := strings.Replace(sshPolicy, "#   severity: medium\n", "", 1)
	fsys := fstest.MapFS{"ssh/root.rego": {Data: []byte(noSeverity)}}
	src, _ := LoadFS(fsys, "test")
	_, err := New(context.Background(), WithSource(src))
	if err == nil || !strings.Contains(err.Error(), "ssh/root.rego") || !strings.Contains(err.Error(), "severity") {
		t.Fatalf("got %v", err)
	}
	dup := strings.Replace(portsPolicy, "GH-NET-901", "GH-SSH-901", 1)
	fsys = fstest.MapFS{"ssh/root.rego": {Data: []byte(sshPolicy)}, "net/ports.rego": {Data: []byte(dup)}}
	src, _ = LoadFS(fsys, "test")
	if _, err = New(context.Background(), WithSource(src)); err == nil || !strings.Contains(err.Error(), "already used") {
		t.Fatalf("duplicate id: got %v", err)
	}
	// A location is where a code-scanning alert points: a directory or a
	// path out of the target would put it nowhere.
	for _, loc := range []string{"etc/ssh/sshd_config", "/etc/ssh/", "/etc/../x", "/"} {
		bad := strings.Replace(sshPolicy, "#   severity: medium\n", "#   severity: medium\n#   location: "+loc+"\n", 1)
		src, _ = LoadFS(fstest.MapFS{"ssh/root.rego": {Data: []byte(bad)}}, "test")
		if _, err = New(context.Background(), WithSource(src)); err == nil || !strings.Contains(err.Error(), "custom.location") {
			t.Errorf("location %q: got %v", loc, err)
		}
	}
}

func TestParseDocumentRejectsGarbage(t *testing.T) {
	for name, js := range map[string]string{
		"not json":     `{"schema":`,
		"array":        `[]`,
		"wrong schema": `{"schema":"other/v1","target":{"kind":"host"},"collectors":{}}`,
		"no kind":      `{"schema":"gpuhost.facts/v1","target":{},"collectors":{}}`,
		"bad status":   `{"schema":"gpuhost.facts/v1","target":{"kind":"host"},"collectors":{"ssh":{"status":"fine"}}}`,
	} {
		if _, err := ParseDocument([]byte(js), "doc.json"); err == nil || !strings.Contains(err.Error(), "doc.json") {
			t.Errorf("%s: got %v, want an error naming the file", name, err)
		}
	}
}

// Both ways a document is read carry what the collectors did not judge,
// and leave out entries that are not a collector and a text.
func TestDocumentCarriesNotJudged(t *testing.T) {
	js := `{"schema":"gpuhost.facts/v1","target":{"kind":"host"},"collectors":{},"not_judged":[` +
		`{"collector":"tls_probe","what":"0.0.0.0:22/tcp: not TLS"},{"collector":1,"what":"x"},"y",` +
		`{"collector":"tls_probe","what":"0.0.0.0:53/udp: not probed"}]}`
	want := []facts.NotJudged{{Collector: "tls_probe", What: "0.0.0.0:22/tcp: not TLS"}, {Collector: "tls_probe", What: "0.0.0.0:53/udp: not probed"}}
	parsed, err := ParseDocument([]byte(js), "doc.json")
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal([]byte(js), &v); err != nil {
		t.Fatal(err)
	}
	decoded, err := DocumentFromValue(v, "doc.json")
	if err != nil {
		t.Fatal(err)
	}
	for name, doc := range map[string]*Document{"parsed": parsed, "decoded": decoded} {
		if !slices.Equal(doc.NotJudged, want) {
			t.Errorf("%s: %+v, want %+v", name, doc.NotJudged, want)
		}
	}
}

func TestDigestFollowsParams(t *testing.T) {
	files := map[string]string{"net/ports.rego": portsPolicy}
	a := newEngine(t, files, map[string]any{"allowed_ports": []any{22}})
	b := newEngine(t, files, map[string]any{"allowed_ports": []any{22, 80}})
	if a.Digest() == b.Digest() || !strings.HasPrefix(a.Digest(), "sha256:") {
		t.Errorf("digests %s and %s should differ", a.Digest(), b.Digest())
	}
}

// A check that judges a collector's absence itself (custom.judges) is
// evaluated when that collector is unavailable or did not run, so it can
// fail a host whose NVML is down; a collector error still stops it.
func TestJudgedCollectorsAreNotGates(t *testing.T) {
	e := newEngine(t, map[string]string{"gpu/up.rego": `# METADATA
# title: NVML is up
# custom:
#   id: GH-GPU-901
#   severity: critical
#   remediation: Load the driver.
#   controls:
#     nist-800-53: [SI-4]
#   targets: [host]
#   requires: []
#   judges: [gpu]
package gpuhost.gpu.up

deny contains "NVML is down" if object.get(input, ["collectors", "gpu", "status"], "") != "ok"
`}, nil)
	for status, want := range map[string]string{
		`"gpu":{"status":"unavailable","reason":"no driver"}`: reports.StatusFail,
		`"gpu":{"status":"not_applicable","reason":"x"}`:      reports.StatusFail,
		``:                      reports.StatusFail,
		`"gpu":{"status":"ok"}`: reports.StatusPass,
		`"gpu":{"status":"error","reason":"crashed"}`: reports.StatusError,
	} {
		d := doc(t, `{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"h","scanned_at":"x"},"collectors":{`+status+`}}`)
		if r := mustEval(t, e, d)[0]; r.Status != want {
			t.Errorf("collectors {%s}: got %s %v, want %s", status, r.Status, r.Messages, want)
		}
	}
}

// TestAbsentSubjectIsNoGap: a required collector that found nothing to
// judge (not_applicable: no sshd installed or running) skips its checks as
// not applicable, out of coverage; one whose facts could not be had
// (unavailable, or not run) is a skip that counts as a gap.
func TestAbsentSubjectIsNoGap(t *testing.T) {
	e := newEngine(t, map[string]string{"ssh/root.rego": `# METADATA
# title: No root login
# custom:
#   id: GH-SSH-901
#   severity: critical
#   remediation: Set PermitRootLogin no.
#   controls:
#     nist-800-53: [AC-6]
#   targets: [host]
#   requires: [ssh]
package gpuhost.ssh.root

deny contains "root may log in" if input.ssh.permit_root_login == "yes"
`}, nil)
	for status, wantOut := range map[string]bool{
		`"ssh":{"status":"not_applicable","reason":"sshd is not installed and none runs"}`: true,
		`"ssh":{"status":"unavailable","reason":"no /proc"}`:                               false,
		``: false,
	} {
		d := doc(t, `{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"h","scanned_at":"x"},"collectors":{`+status+`}}`)
		r := mustEval(t, e, d)[0]
		if r.Status != reports.StatusSkip || r.OutOfScope != wantOut || r.Unevaluated() == wantOut {
			t.Errorf("collectors {%s}: %s out_of_scope=%v unevaluated=%v %v; want skip, out_of_scope=%v", status, r.Status, r.OutOfScope, r.Unevaluated(), r.Messages, wantOut)
		}
	}
}

// probePolicy denies what it saw and errors for what it could not see.
const probePolicy = `# METADATA
# title: Probed ports are sound
# custom:
#   id: GH-TLS-901
#   severity: high
#   remediation: Fix it.
#   controls:
#     nist-800-53: [SC-8]
#   targets: [host]
#   requires: [tls_probe]
package gpuhost.tls.probed

deny contains sprintf("%s is weak", [p.address]) if {
	some p in input.tls.probes
	p.weak
}

error contains sprintf("%s could not be probed: %s", [p.address, p.error]) if {
	some p in input.tls.probes
	p.error
}
`

// An error set makes the check an error, never a pass, and keeps its
// failures in the messages. (engine/fleet's agreement tests hold the memo
// to the same verdicts over the whole pack, error rules included.)
func TestErrorRuleMakesTheCheckAnError(t *testing.T) {
	probes := func(ps string) *Document {
		return doc(t, `{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"h","scanned_at":"x"},
		  "collectors":{"tls_probe":{"status":"ok"}},"tls":{"probes":[`+ps+`]}}`)
	}
	cases := []struct {
		probes, status string
		messages       []string
	}{
		{`{"address":"a:1","error":"timed out"}`, reports.StatusError, []string{"a:1 could not be probed: timed out"}},
		{`{"address":"a:1","error":"timed out"},{"address":"b:2","weak":true}`, reports.StatusError,
			[]string{"a:1 could not be probed: timed out", "b:2 is weak"}},
		{`{"address":"b:2","weak":true}`, reports.StatusFail, []string{"b:2 is weak"}},
		{`{"address":"c:3"}`, reports.StatusPass, []string{}},
	}
	e := newEngineWith(t, map[string]string{"tls/probed.rego": probePolicy})
	for range 2 {
		for _, c := range cases {
			r := mustEval(t, e, probes(c.probes))[0]
			if r.Status != c.status || strings.Join(r.Messages, "|") != strings.Join(c.messages, "|") {
				t.Errorf("probes %s: got %s %q, want %s %q", c.probes, r.Status, r.Messages, c.status, c.messages)
			}
		}
	}
}

const loopbackPolicy = `# METADATA
# title: Loopback listeners
# custom:
#   id: GH-TLS-902
#   severity: medium
#   severity_param: loopback_severity
#   remediation: Fix it.
#   controls:
#     nist-800-53: [SC-8]
#   targets: [host]
#   requires: []
package gpuhost.tls.loopback

deny contains "weak" if input.weak
`

// A check may take its severity from a parameter, and a bad value stops
// the engine rather than leaving the check without a weight.
func TestSeverityFromParameter(t *testing.T) {
	files := map[string]string{"tls/loopback.rego": loopbackPolicy}
	e := newEngine(t, files, map[string]any{"loopback_severity": "low"})
	d := doc(t, `{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"h","scanned_at":"x"},"collectors":{},"weak":true}`)
	if r := mustEval(t, e, d)[0]; r.Severity != "low" || r.Status != reports.StatusFail {
		t.Errorf("got %s %s, want a low fail", r.Severity, r.Status)
	}
	if c := e.Checks()[0]; c.Severity != "low" || c.SeverityParam != "loopback_severity" {
		t.Errorf("check %+v", c)
	}
	for _, bad := range []map[string]any{{}, {"loopback_severity": "urgent"}, {"loopback_severity": 3}} {
		fsys := fstest.MapFS{"tls/loopback.rego": {Data: []byte(loopbackPolicy)}}
		src, err := LoadFS(fsys, "test")
		if err != nil {
			t.Fatal(err)
		}
		_, err = New(context.Background(), WithSource(src), WithParams(bad))
		var ce *CompileError
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), "parameter loopback_severity") {
			t.Errorf("params %v: got %v, want a CompileError naming the parameter", bad, err)
		}
	}
}
