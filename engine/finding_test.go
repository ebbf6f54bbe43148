package engine

import (
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/gpuhost/gpuhost/reports"
)

func TestFindingOf(t *testing.T) {
	cases := []struct {
		in   string
		want reports.Finding
		ok   bool
	}{
		{`{"msg": "m", "file": "/etc/x", "line": 3}`, reports.Finding{Message: "m", File: "/etc/x", Line: 3}, true},
		{`{"msg": "m", "subject": "GPU-1"}`, reports.Finding{Message: "m", Subject: "GPU-1"}, true},
		{`{"msg": "m"}`, reports.Finding{Message: "m"}, true},
		// A policy's mistake keeps its text: shown as JSON, not half read.
		{`{"msg": "m", "line": "3"}`, reports.Finding{}, false},
		{`{"msg": "m", "line": 1.5}`, reports.Finding{}, false},
		{`{"msg": "m", "line": -1}`, reports.Finding{}, false},
		{`{"msg": "m", "where": "x"}`, reports.Finding{}, false},
		{`{"msg": 1}`, reports.Finding{}, false},
		{`{"file": "/etc/x"}`, reports.Finding{}, false},
		{`["m"]`, reports.Finding{}, false},
	}
	for _, c := range cases {
		got, ok := findingOf(ast.MustParseTerm(c.in).Value)
		if ok != c.ok || got != c.want {
			t.Errorf("findingOf(%s) = %+v, %v; want %+v, %v", c.in, got, ok, c.want, c.ok)
		}
	}
}

// TestBindingSetsKeepFindings: object messages give their text to the
// messages and, when they say more, a finding; errors come before denies.
func TestBindingSetsKeepFindings(t *testing.T) {
	deny := `{"plain", {"msg": "at a line", "file": "/etc/a", "line": 2}, {"msg": "about a GPU", "subject": "GPU-9"}}`
	errs := `{{"msg": "could not read", "file": "/etc/b"}}`
	term := ast.MustParseTerm(`[` + deny + `, set(), ` + errs + `]`)
	outs, err := bindingSets(rego.ResultSet{{Bindings: rego.Vars{"x": term}}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	o := outs[0]
	if len(o.Deny) != 3 || o.Deny[0] != "about a GPU" || o.Deny[2] != "plain" {
		t.Errorf("deny %q", o.Deny)
	}
	want := []reports.Finding{
		{Message: "could not read", File: "/etc/b"},
		{Message: "about a GPU", Subject: "GPU-9"},
		{Message: "at a line", File: "/etc/a", Line: 2},
	}
	if len(o.Found) != len(want) {
		t.Fatalf("found %+v", o.Found)
	}
	for i := range want {
		if o.Found[i] != want[i] {
			t.Errorf("found[%d] = %+v, want %+v", i, o.Found[i], want[i])
		}
	}
}
