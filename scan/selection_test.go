package scan

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/engine"
)

func TestSelection(t *testing.T) {
	checks := []engine.Check{
		{ID: "GH-SSH-001", Severity: "high", File: "ssh/permit_root_login.rego"},
		{ID: "GH-SSH-002", Severity: "medium", File: "ssh/ciphers.rego"},
		{ID: "GH-IAM-001", Severity: "critical", File: "iam/sudoers.rego"},
		{ID: "GH-NET-003", Severity: "medium", File: "net/firewall_allowed_ports.rego"},
	}
	for _, tc := range []struct {
		name string
		sel  Selection
		want []string
	}{
		{"nothing chosen", Selection{}, nil},
		{"an id, any case", Selection{Only: []string{"gh-ssh-001"}}, []string{"GH-SSH-001"}},
		{"a glob", Selection{Only: []string{"GH-SSH-*"}}, []string{"GH-SSH-001", "GH-SSH-002"}},
		{"a folder", Selection{Only: []string{"iam", "net"}}, []string{"GH-IAM-001", "GH-NET-003"}},
		{"a severity", Selection{Only: []string{"medium"}}, []string{"GH-NET-003", "GH-SSH-002"}},
		{"skip alone", Selection{Skip: []string{"ssh"}}, []string{"GH-IAM-001", "GH-NET-003"}},
		{"skip wins over only", Selection{Only: []string{"ssh", "critical"}, Skip: []string{"GH-SSH-002"}}, []string{"GH-IAM-001", "GH-SSH-001"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			selected, err := tc.sel.Compile(checks)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == nil {
				if selected != nil {
					t.Fatal("an empty selection selects")
				}
				return
			}
			var got []string
			for _, c := range checks {
				if selected(c.ID) {
					got = append(got, c.ID)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("selected %v, want %v", got, tc.want)
			}
		})
	}

	// A pattern that matches nothing is a typo, not an empty selection.
	for _, sel := range []Selection{{Only: []string{"GH-SSH-01"}}, {Skip: []string{"sssh"}}, {Only: []string{"ssh"}, Skip: []string{"low"}}} {
		_, err := sel.Compile(checks)
		var u *UnmatchedError
		if !errors.As(err, &u) || !slices.Contains(u.Words, "GH-SSH-001") || !slices.Contains(u.Words, "ssh") || !slices.Contains(u.Words, "low") {
			t.Errorf("%+v: %v, want an UnmatchedError listing the words", sel, err)
		}
	}
	if _, err := (Selection{Only: []string{"GH-[SSH"}}).Compile(checks); err == nil || !strings.Contains(err.Error(), "GH-[SSH") {
		t.Errorf("a bad glob: %v", err)
	}
}
