package fleet

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/facts"
)

// readsPolicy reads input in the ways the pack does: object.get on input with
// a string and an array key, a nested ref, a function given an input path,
// and a package-level alias.
const readsPolicy = `# METADATA
# title: Reads
# custom:
#   id: GH-MEMO-001
#   severity: low
#   remediation: none
#   targets: [host]
#   requires: []
package gpuhost.memo.reads

packages := object.get(input, "packages", [])

firewall := object.get(input, ["network", "firewall"], null)

tls := input.tls

held(p) if p.held

deny contains msg if {
	some p in packages
	not held(p)
	msg := sprintf("%s not held on %s", [p.name, input.target.kind])
}

deny contains "no firewall" if firewall == null

deny contains msg if {
	some e in tls.nginx
	msg := sprintf("nginx %v", [e])
}

deny contains input.ssh.ciphers[_]
`

const wholePolicy = `# METADATA
# title: Whole
# custom:
#   id: GH-MEMO-002
#   severity: low
#   remediation: none
#   targets: [host]
#   requires: []
package gpuhost.memo.whole

deny contains "big" if count(input) > 100
`

const clockPolicy = `# METADATA
# title: Clock
# custom:
#   id: GH-MEMO-003
#   severity: low
#   remediation: none
#   targets: [host]
#   requires: []
package gpuhost.memo.clock

deny contains "late" if time.now_ns() > 0
`

const withPolicy = `# METADATA
# title: With
# custom:
#   id: GH-MEMO-004
#   severity: low
#   remediation: none
#   targets: [host]
#   requires: []
package gpuhost.memo.with

inner contains "x" if input.a == 1

deny contains m if {
	some m in inner with input as {"a": 1}
}
`

func TestReadSets(t *testing.T) {
	e := memoEngine(t, 10, map[string]string{
		"memo/reads.rego": readsPolicy,
		"memo/whole.rego": wholePolicy,
		"memo/clock.rego": clockPolicy,
		"memo/with.rego":  withPolicy,
	})
	got := map[string]*readSet{}
	for i, c := range e.Checks() {
		got[c.ID] = e.reads[i]
	}
	// target.kind is only printed; each cipher is the message itself, so
	// only how many there are decides whether the check passes.
	want := "[network.firewall packages ssh.ciphers[*]! target.kind! tls]"
	if rs := got["GH-MEMO-001"]; rs == nil || fmt.Sprint(rs.items) != want {
		t.Errorf("reads: got %v, want %s", rs.items, want)
	}
	if rs := got["GH-MEMO-001"]; rs == nil || rs.passIDs == nil {
		t.Error("GH-MEMO-001 prints what it only tests for presence: it needs a pass key")
	}
	for _, id := range []string{"GH-MEMO-002", "GH-MEMO-003", "GH-MEMO-004"} {
		if got[id] != nil {
			t.Errorf("%s must not be memoized, got reads %v", id, got[id].items)
		}
	}
}

// fieldsPolicy reads input in the finer ways the analysis follows: fields of
// each member, a count, a value printed and a value both printed and
// tested, a value used as a rule's key, and a comprehension.
const fieldsPolicy = `# METADATA
# title: Fields
# custom:
#   id: GH-MEMO-006
#   severity: low
#   remediation: none
#   targets: [host]
#   requires: []
package gpuhost.memo.fields

by_path[f.path] contains f.sha256 if some f in input.files

names := [p.name | some p in object.get(input, "packages", [])]

deny contains msg if {
	some d in input.gpu.devices
	d.ecc.current == false
	msg := sprintf("GPU %d (%s) runs with ECC off", [d.index, d.uuid])
}

deny contains msg if {
	some d in input.gpu.devices
	d.temperature > 80
	msg := sprintf("GPU %d is at %d", [d.index, d.temperature])
}

deny contains "too few" if count(input.gpu.devices) < 2

deny contains msg if {
	msg := sprintf("%s", [input.target.ref])
	msg == "bad"
}

deny contains sprintf("%d paths", [count(by_path)]) if count(by_path) > 5

deny contains "no sshd" if not "openssh-server" in names
`

func TestFinerReadSets(t *testing.T) {
	e := memoEngine(t, 10, map[string]string{"memo/fields.rego": fieldsPolicy})
	// The UUID is only printed, the index printed twice, the temperature
	// tested; the ref is printed into a message that is then tested; the
	// paths are a rule's keys.
	want := "[files[*]? files[*].path files[*].sha256 #gpu.devices gpu.devices[*]? " +
		"gpu.devices[*].ecc.current gpu.devices[*].index! gpu.devices[*].temperature gpu.devices[*].uuid! " +
		"packages? packages[*]? packages[*].name target.ref]"
	if rs := e.reads[0]; rs == nil || fmt.Sprint(rs.items) != want {
		t.Errorf("reads:\n got %v\nwant %s", rs.items, want)
	}
}

func memoDoc(t *testing.T, ref, ciphers string, held bool) *engine.Document {
	t.Helper()
	return doc(t, memoJSON(ref, ciphers, held))
}

// decodedDoc is a document as scan facts makes it: decoded JSON, converted
// only when a check must be evaluated.
func decodedDoc(t *testing.T, js string) *engine.Document {
	t.Helper()
	var v any
	dec := json.NewDecoder(strings.NewReader(js))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	d, err := engine.DocumentFromValue(v, "test")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func memoJSON(ref, ciphers string, held bool) string {
	return (fmt.Sprintf(`{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":%q,"scanned_at":"x"},
	  "collectors":{},"packages":[{"name":"a","held":%v}],"tls":{"nginx":[{"file":"f"}]},
	  "ssh":{"ciphers":[%s]},"gpu":{"temperature":%d}}`, ref, held, ciphers, len(ref)))
}

// TestMemoAgreesWithEvaluation evaluates a fleet with and without the memo:
// every result must match, and hosts that differ only where no check reads
// must be answered from the memo.
func TestMemoAgreesWithEvaluation(t *testing.T) {
	files := map[string]string{"memo/reads.rego": readsPolicy, "memo/whole.rego": wholePolicy}
	cold := compile(t, files)
	warm := memoEngine(t, 100, files)
	type host struct{ js string }
	fleet := []host{
		{memoJSON("h1", `"aes128-cbc"`, false)},
		{memoJSON("h22", `"aes128-cbc"`, false)}, // differs only in unread fields
		{memoJSON("h333", `"3des-cbc"`, false)},  // a read field changed
		{memoJSON("h4444", `"3des-cbc"`, true)},
		{memoJSON("h1", `"aes128-cbc"`, false)},
	}
	var stored []int64
	for i, h := range fleet {
		d := doc(t, h.js)
		want := mustEval(t, cold, d)
		got := mustEval(t, warm, d)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("host %d: memo gave %+v, evaluation %+v", i, got, want)
		}
		if got := mustEval(t, warm, decodedDoc(t, fleet[i].js)); !reflect.DeepEqual(got, want) {
			t.Errorf("host %d decoded: memo gave %+v, evaluation %+v", i, got, want)
		}
		stored = append(stored, warm.memo.size.Load())
	}
	// GH-MEMO-001 is stored for hosts 1, 3 and 4; the whole-document check
	// is never memoized.
	if want := []int64{1, 1, 2, 3, 3}; !slices.Equal(stored, want) {
		t.Errorf("memo sizes after each host: got %v, want %v", stored, want)
	}
}

func TestMemoStartsOverWhenFull(t *testing.T) {
	e := memoEngine(t, 2, map[string]string{"memo/reads.rego": readsPolicy})
	for i := range 5 {
		mustEval(t, e, memoDoc(t, "h", fmt.Sprintf("%q", fmt.Sprint(i)), false))
		if n := e.memo.size.Load(); n > 2 {
			t.Fatalf("memo holds %d entries, limit 2", n)
		}
	}
	// The results given back are copies: a caller changing them must not
	// change what the next host is told.
	d := memoDoc(t, "h", `"x"`, false)
	first := mustEval(t, e, d)
	first[0].Messages[0] = "changed"
	if again := mustEval(t, e, d); again[0].Messages[0] == "changed" {
		t.Error("a caller's edit leaked into the memo")
	}
}

func TestCanonicalDigestSeparatesValues(t *testing.T) {
	seen := map[string]string{}
	for _, js := range []string{
		`{"v":null}`, `{"v":true}`, `{"v":false}`, `{"v":1}`, `{"v":"1"}`, `{"v":[1]}`, `{"v":[[1]]}`,
		`{"v":["a","b"]}`, `{"v":["ab"]}`, `{"v":{"a":"b"}}`, `{"v":{"ab":""}}`, `{"v":{}}`, `{"v":[]}`, `{}`,
		`{"v":{"b":1,"a":[2,{"c":null}]}}`, `{"v":1.50}`,
	} {
		raw := `{"schema":"gpuhost.facts/v1","target":{"kind":"host"},"collectors":{},"x":` + js + `}`
		fromAST := newItemDigests(doc(t, raw), []readItem{valueAt("x", "v")}, nil)
		if !fromAST.digest(0) {
			t.Fatalf("%s: not digested", js)
		}
		sum := fromAST.sums[0]
		if prev, dup := seen[string(sum[:])]; dup {
			t.Errorf("%s and %s digest alike", prev, js)
		}
		seen[string(sum[:])] = js

		// The decoded JSON a saved document arrives as must digest as its
		// AST does, or the two paths would never share outcomes.
		decoded, err := facts.DecodeJSON([]byte(raw))
		if err != nil {
			// Not a valid facts document; decode it plainly.
			dec := json.NewDecoder(strings.NewReader(raw))
			dec.UseNumber()
			if err := dec.Decode(&decoded); err != nil {
				t.Fatal(err)
			}
		}
		d, err := engine.DocumentFromValue(decoded, "x")
		if err != nil {
			t.Fatal(err)
		}
		fromJSON := newItemDigests(d, []readItem{valueAt("x", "v")}, nil)
		if !fromJSON.digest(0) || fromJSON.sums[0] != sum {
			t.Errorf("%s: decoded JSON digests differently from its AST", js)
		}
	}
}

// valueAt is a value read of the path through the given keys.
func valueAt(keys ...string) readItem {
	it := readItem{mode: readValue}
	for _, k := range keys {
		it.path = append(it.path, step{key: k})
	}
	return it
}

func TestDigestBoundsDepth(t *testing.T) {
	deep := strings.Repeat("[", maxDigestDepth+10) + strings.Repeat("]", maxDigestDepth+10)
	d := doc(t, `{"schema":"gpuhost.facts/v1","target":{"kind":"host"},"collectors":{},"x":`+deep+`}`)
	if newItemDigests(d, []readItem{valueAt("x")}, nil).digest(0) {
		t.Error("a document nested past the bound was digested")
	}
}

// TestPreparedQueriesStayBounded makes every host miss a different set of
// checks: past the bound the engine evaluates the whole gated set instead
// of keeping one more prepared query, with the same results.
func TestPreparedQueriesStayBounded(t *testing.T) {
	tlsPolicy := strings.NewReplacer("GH-MEMO-002", "GH-MEMO-005", "memo.whole", "memo.tls",
		`"big" if count(input) > 100`, `"no nginx" if count(input.tls.nginx) == 0`).Replace(wholePolicy)
	files := map[string]string{"memo/reads.rego": readsPolicy, "memo/tls.rego": tlsPolicy}
	cold := compile(t, files)
	warm := New(compile(t, files, engine.WithMaxQueries(1)), 100)
	hosts := []string{
		memoJSON("a", `"x"`, false),
		// Only GH-MEMO-001's inputs change: it alone misses.
		memoJSON("b", `"y"`, false),
		memoJSON("c", `"z"`, true),
	}
	for i, js := range hosts {
		want := mustEval(t, cold, doc(t, js))
		if got := mustEval(t, warm, doc(t, js)); !reflect.DeepEqual(got, want) {
			t.Errorf("host %d: got %+v, want %+v", i, got, want)
		}
	}
	// New keeps the query of every check; host b misses GH-MEMO-001 alone,
	// a set that would be a second query.
	if n := warm.QueriesKept(); n != 1 {
		t.Errorf("%d prepared queries kept, want the bound, 1", n)
	}
	unbounded := memoEngine(t, 100, files)
	for _, js := range hosts {
		mustEval(t, unbounded, doc(t, js))
	}
	if n := unbounded.QueriesKept(); n < 2 {
		t.Errorf("the hosts made %d distinct sets of misses; the test needs at least 2", n)
	}
}

// TestMemoStopsLookingUpChecksThatNeverHit runs a fleet whose every host
// differs where GH-MEMO-001 reads: past the probe the check is no longer
// looked up (nor stored), and its results still match evaluation.
func TestMemoStopsLookingUpChecksThatNeverHit(t *testing.T) {
	files := map[string]string{"memo/reads.rego": readsPolicy}
	cold := compile(t, files)
	warm := memoEngine(t, 10*memoProbe, files)
	for i := range memoProbe + 20 {
		d := memoDoc(t, "h", fmt.Sprintf("%q", fmt.Sprint("cipher-", i)), false)
		if got, want := mustEval(t, warm, d), mustEval(t, cold, d); !reflect.DeepEqual(got, want) {
			t.Fatalf("host %d: memo gave %+v, evaluation %+v", i, got, want)
		}
	}
	if n := warm.memo.checks[0].lookups.Load(); n != memoProbe {
		t.Errorf("%d lookups, want the check dropped after %d", n, memoProbe)
	}
	if n := warm.memo.size.Load(); n != memoProbe {
		t.Errorf("memo holds %d entries, want only the probe's %d", n, memoProbe)
	}

	// A check whose hosts share their inputs keeps its place.
	shared := memoEngine(t, 10*memoProbe, files)
	for i := range memoProbe + 20 {
		mustEval(t, shared, memoDoc(t, fmt.Sprint("h", i), `"aes128-cbc"`, false))
	}
	if n, hits := shared.memo.checks[0].lookups.Load(), shared.memo.checks[0].hits.Load(); n != memoProbe+20 || hits != n-1 {
		t.Errorf("shared inputs: %d lookups, %d hits; want %d and %d", n, hits, memoProbe+20, memoProbe+19)
	}
}

// TestItemsWithAlikeNamesStayApart reads input["a.b"] in one check and
// input.a.b in another: the two must not share a digest.
func TestItemsWithAlikeNamesStayApart(t *testing.T) {
	policy := func(id, pkg, ref string) string {
		return strings.NewReplacer("GH-MEMO-002", id, "memo.whole", pkg, `"big" if count(input) > 100`, `"odd" if `+ref+` == 1`).Replace(wholePolicy)
	}
	files := map[string]string{
		"memo/dotted.rego": policy("GH-MEMO-007", "memo.dotted", `input["a.b"]`),
		"memo/nested.rego": policy("GH-MEMO-008", "memo.nested", `input.a.b`),
	}
	e, cold := memoEngine(t, 100, files), compile(t, files)
	if len(e.readItems) != 2 {
		t.Fatalf("items %v: want input[\"a.b\"] and input.a.b apart", e.readItems)
	}
	for _, js := range []string{`{"a.b":1,"a":{"b":2}}`, `{"a.b":2,"a":{"b":1}}`} {
		d := doc(t, `{"schema":"gpuhost.facts/v1","target":{"kind":"host"},"collectors":{},`+js[1:])
		if got, want := mustEval(t, e, d), mustEval(t, cold, d); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: memo gave %+v, evaluation %+v", js, got, want)
		}
	}
}

// findingPolicy writes finding objects: where and about what a failure is
// goes into the object's fields, which say nothing about whether it fails.
const findingPolicy = `# METADATA
# title: Findings
# custom:
#   id: GH-MEMO-007
#   severity: low
#   remediation: none
#   targets: [host]
#   requires: []
package gpuhost.memo.findings

deny contains {"msg": msg, "subject": d.uuid} if {
	some d in input.gpu.devices
	d.ecc.current == false
	msg := sprintf("GPU %d runs with ECC off", [d.index])
}

deny contains {"msg": "weak", "file": c.file, "line": c.line} if {
	some c in input.ssh.ciphers
	c.weak
}
`

func TestFindingFieldsArePrinted(t *testing.T) {
	e := memoEngine(t, 10, map[string]string{"memo/findings.rego": findingPolicy})
	want := "[gpu.devices[*]? gpu.devices[*].ecc.current gpu.devices[*].index! gpu.devices[*].uuid! " +
		"ssh.ciphers[*]? ssh.ciphers[*].file! ssh.ciphers[*].line! ssh.ciphers[*].weak]"
	if rs := e.reads[0]; rs == nil || fmt.Sprint(rs.items) != want {
		t.Errorf("reads:\n got %v\nwant %s", rs.items, want)
	}
}
