package catalog

import (
	"context"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/scan"
)

func defaultPack(t *testing.T) *Catalog {
	t.Helper()
	e, err := scan.Pack{}.Engine(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return New(e)
}

// Every check of the default pack must be reviewable: an id, a severity, a
// remediation and at least one compliance control.
func TestDefaultPackIsComplete(t *testing.T) {
	cat := defaultPack(t)
	if len(cat.Entries) < 10 {
		t.Fatalf("only %d checks in the default pack", len(cat.Entries))
	}
	for _, p := range cat.Problems() {
		t.Error(p)
	}
	// The catalog must find what the SSH cipher check reads.
	for _, e := range cat.Entries {
		if e.ID == "GH-SSH-004" && !slices.Contains(e.Params, "ssh_weak_ciphers") {
			t.Errorf("GH-SSH-004 params = %v, want ssh_weak_ciphers among them", e.Params)
		}
	}
}

func TestProblems(t *testing.T) {
	cat := &Catalog{Entries: []Entry{
		{Check: engine.Check{ID: "A", Severity: "low", Remediation: "r", Controls: map[string][]string{"nist-800-53": {"CM-6"}}}},
		{Check: engine.Check{File: "b.rego", Controls: map[string][]string{"nist-800-53": {}}}},
	}}
	got := cat.Problems()
	want := []string{"b.rego: no id", "b.rego: no severity", "b.rego: no remediation", "b.rego: no compliance control"}
	if !slices.Equal(got, want) {
		t.Errorf("Problems = %q, want %q", got, want)
	}
}

func TestMatricesAndParams(t *testing.T) {
	rego := `# METADATA
# title: one
# custom:
#   id: EX-001
#   severity: high
#   remediation: r
#   controls:
#     nist-800-53: [SC-13, SC-8, "CM-7(1)", CM-7]
#     cis-ubuntu-22.04: ["1.2.10", "1.2.9"]
#   targets: [rootfs]
#   requires: [ssh]
package gpuhost.ex.one

deny contains "x" if data.gpuhost.params.knob
`
	src, err := engine.LoadFS(fstest.MapFS{"one.rego": {Data: []byte(rego)}, "params.default.yaml": {Data: []byte("knob: \"<b>\"\nunused: 3\n")}}, "ex")
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(context.Background(), engine.WithSource(src))
	if err != nil {
		t.Fatal(err)
	}
	cat := New(e)
	ms := cat.Matrices()
	if len(ms) != 2 || ms[0].Framework != "cis-ubuntu-22.04" || ms[1].Framework != "nist-800-53" {
		t.Fatalf("matrices %+v", ms)
	}
	if got, want := ms[1].Controls, []string{"CM-7", "CM-7(1)", "SC-8", "SC-13"}; !slices.Equal(got, want) {
		t.Errorf("controls %q, want %q, in the order people read them", got, want)
	}
	if !slices.Equal(ms[0].Checks, []string{"EX-001"}) || !ms[0].Marks[0][0] {
		t.Errorf("matrix %+v", ms[0])
	}
	want := []Param{{Name: "knob", Value: `"<b>"`, Readers: []string{"EX-001"}}, {Name: "unused", Value: "3"}}
	got := cat.ParamTable()
	if len(got) != len(want) {
		t.Fatalf("params %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i].Name != want[i].Name || got[i].Value != want[i].Value || !slices.Equal(got[i].Readers, want[i].Readers) {
			t.Errorf("param %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	if got := ControlList(cat.Entries[0].Controls); got != "cis-ubuntu-22.04: 1.2.9, 1.2.10; nist-800-53: CM-7, CM-7(1), SC-8, SC-13" {
		t.Errorf("ControlList = %q", got)
	}
}

func TestNaturalCompare(t *testing.T) {
	got := []string{"SC-13", "CM-7(1)", "SC-8", "1.2.10", "CM-7", "1.2.9", "AC-2", "5.2.14"}
	slices.SortFunc(got, naturalCompare)
	want := []string{"1.2.9", "1.2.10", "5.2.14", "AC-2", "CM-7", "CM-7(1)", "SC-8", "SC-13"}
	if !slices.Equal(got, want) {
		t.Errorf("sorted %v, want %v", got, want)
	}
}
