package params

import (
	"context"
	"slices"
	"testing"
	"testing/fstest"

	"github.com/gpuhost/gpuhost/engine"
)

func TestParamsUsed(t *testing.T) {
	meta := func(id string) string {
		return "# METADATA\n# title: t\n# custom:\n#   id: " + id + "\n#   severity: low\n#   remediation: r\n#   targets: [rootfs]\n"
	}
	fsys := fstest.MapFS{
		"a.rego": {Data: []byte(meta("A") + `package gpuhost.x.a

import data.gpuhost.params
import data.gpuhost.lib.ports as lp

deny contains "direct" if data.gpuhost.params.alpha
deny contains "index" if data.gpuhost.params["beta"] == 1
deny contains "alias" if params.gamma
deny contains "get" if object.get(data.gpuhost.params, "delta", false)
deny contains "path" if object.get(data.gpuhost.params, ["epsilon", "x"], false)
deny contains "empty" if object.get(data.gpuhost.params, [], false)
deny contains "lib" if lp.open
`)},
		"b.rego": {Data: []byte(meta("B") + `package gpuhost.x.b

deny contains k if {
	some k, _ in data.gpuhost.params
}
`)},
		"c.rego": {Data: []byte(meta("C") + `package gpuhost.x.c

deny contains "none" if input.never
`)},
		"lib.rego": {Data: []byte(`package gpuhost.lib.ports

open if count(data.gpuhost.params.zeta) > 0
`)},
	}
	src, err := engine.LoadFS(fsys, "test")
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(context.Background(), engine.WithSource(src))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"A": {All, "alpha", "beta", "delta", "epsilon", "gamma", "zeta"},
		"B": {All},
		"C": {},
	}
	for _, c := range e.Checks() {
		if got := Used(e, c); !slices.Equal(got, want[c.ID]) {
			t.Errorf("%s: Used = %v, want %v", c.ID, got, want[c.ID])
		}
	}
	if got := Used(e, engine.Check{File: "nope.rego"}); got != nil {
		t.Errorf("unknown file: %v", got)
	}
}
