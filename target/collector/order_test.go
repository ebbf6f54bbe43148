package collector

import (
	"context"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
)

// fake is a collector that only has a name and needs.
type fake struct {
	name  string
	needs []string
}

func (c fake) Name() string                                            { return c.name }
func (c fake) Needs() []string                                         { return c.needs }
func (fake) Collect(context.Context, *collect.Env, *facts.Facts) error { return nil }

func names(cs []Collector) string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name())
	}
	return strings.Join(out, " ")
}

func TestOrderRunsNeedsFirstAndBreaksTiesByName(t *testing.T) {
	cs := []Collector{
		fake{"tls_probe", []string{"network", "tls"}},
		fake{"tls", []string{"packages"}},
		fake{"os", nil},
		fake{"network", nil},
		fake{"packages", nil},
		fake{"cgroup", []string{"kernel", "packages", "kernel"}},
		fake{"kernel", nil},
	}
	got, err := Order(cs)
	if err != nil {
		t.Fatal(err)
	}
	if want := "kernel network os packages cgroup tls tls_probe"; names(got) != want {
		t.Errorf("order %q, want %q", names(got), want)
	}
	// The order is the same however the caller listed them.
	rev := make([]Collector, len(cs))
	for i, c := range cs {
		rev[len(cs)-1-i] = c
	}
	again, err := Order(rev)
	if err != nil {
		t.Fatal(err)
	}
	if names(again) != names(got) {
		t.Errorf("reversed input ordered %q, want %q", names(again), names(got))
	}
}

func TestOrderRefusesWhatCannotBeOrdered(t *testing.T) {
	for _, tc := range []struct {
		name string
		cs   []Collector
		want string
	}{
		{"unknown need", []Collector{fake{"ssh", []string{"network"}}, fake{"os", nil}},
			`ssh needs "network", which is not among the collectors`},
		{"cycle", []Collector{fake{"a", []string{"b"}}, fake{"b", []string{"c"}}, fake{"c", []string{"a"}}, fake{"d", nil}},
			"collectors need each other: a needs b needs c needs a"},
		{"cycle behind a dependent", []Collector{fake{"x", []string{"y"}}, fake{"y", []string{"z"}}, fake{"z", []string{"y"}}},
			"collectors need each other: y needs z needs y"},
		{"itself", []Collector{fake{"a", []string{"a"}}}, "a needs itself"},
		{"two of one name", []Collector{fake{"os", nil}, fake{"os", nil}}, `two collectors are named "os"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Order(tc.cs)
			if err == nil {
				t.Fatalf("ordered %q, want an error", names(got))
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want it to say %q", err, tc.want)
			}
		})
	}
}
