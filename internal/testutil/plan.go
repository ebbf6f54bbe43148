package testutil

import (
	"strings"
	"testing"
)

// PlanStep is one step of a rendered gpuhost-gpu plan, from the line after
// its `step "NAME"` line up to the next step; the test fails when the plan
// has no such step.
func PlanStep(t testing.TB, plan, name string) string {
	t.Helper()
	_, rest, ok := strings.Cut(plan, "\nstep \""+name+"\"\n")
	if !ok {
		t.Fatalf("the plan has no step %q", name)
	}
	body, _, _ := strings.Cut(rest, "\nstep \"")
	return body
}
