package main

import (
	"slices"
	"strings"
	"testing"
)

// The shell completions offer the values the flags take: as bash, zsh and
// fish ask for them, through cobra's __complete.
func TestCompletionsOfferValues(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"scan", "rootfs", "DIR", "--format", ""}, []string{"sarif", "junit", "xccdf", "table"}},
		{[]string{"scan", "facts", "F", "--fail-on", ""}, []string{"critical", "high", "none"}},
		{[]string{"drift", "--fail-on-skip", ""}, []string{"high", "info"}},
		{[]string{"scan", "image", "F", "--report", ""}, []string{"sarif=", "junit=", "html="}},
		{[]string{"scan", "host", "--compliance", ""}, []string{"cis-ubuntu-22.04-l1-server", "cis-ubuntu-22.04-l2-server", "gpu-container-host"}},
	} {
		o := gpuhost(t, "", append([]string{"__complete"}, c.args...)...)
		lines := strings.Split(o.stdout, "\n")
		for _, w := range c.want {
			if !slices.Contains(lines, w) {
				t.Errorf("completing %v: no %q in\n%s%s", c.args, w, o.stdout, o.stderr)
			}
		}
	}
	o := gpuhost(t, "", "completion", "bash")
	if o.code != 0 || !strings.Contains(o.stdout, "__start_gpuhost") {
		t.Errorf("completion bash: exit %d\n%s", o.code, o.stderr)
	}
}
