package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every command that runs shows examples and its exit status in --help,
// and each example names commands and flags the tree has: an example
// cannot go on naming what was renamed or removed. Every entry of the
// examples table names a command, except those the lean build leaves out.
func TestExamplesRun(t *testing.T) {
	root := (&app{}).rootCommand()
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			return
		}
		if c.Runnable() && !c.HasSubCommands() {
			if c.Example == "" {
				t.Errorf("%s has no examples in its help", c.CommandPath())
			}
			if c.Annotations[exitStatusKey] == "" {
				t.Errorf("%s does not say its exit status", c.CommandPath())
			}
		}
		for _, line := range strings.Split(c.Example, "\n") {
			checkExample(t, root, c.CommandPath(), strings.TrimSpace(line))
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for path := range examples {
		if path == "" {
			continue
		}
		if found, _, err := root.Find(strings.Fields(path)); err != nil || found.CommandPath() != "gpuhost "+path {
			if !leanOnly(path) {
				t.Errorf("examples names %q, which is no command", path)
			}
		}
	}
}

// leanOnly reports whether path is one of the commands the lean build
// leaves out, when this is the lean build.
func leanOnly(path string) bool {
	if fullBuild {
		return false
	}
	for _, c := range []string{"plan", "lock", "manifest", "sbom", "boot", "tree-digest", "verify"} {
		if path == c || strings.HasPrefix(path, c+" ") {
			return true
		}
	}
	return false
}

// checkExample resolves one example line that runs gpuhost to its command,
// and every --flag on it to one of that command's flags.
func checkExample(t *testing.T, root *cobra.Command, where, line string) {
	t.Helper()
	line = strings.TrimPrefix(line, "sudo ")
	if !strings.HasPrefix(line, "gpuhost ") {
		return
	}
	words := strings.Fields(strings.TrimPrefix(line, "gpuhost "))
	c, rest, err := root.Find(words)
	if err != nil {
		t.Errorf("%s: example %q: %v", where, line, err)
		return
	}
	if c == root && len(words) > 0 && !strings.HasPrefix(words[0], "-") {
		t.Errorf("%s: example %q names no command", where, line)
		return
	}
	for _, w := range rest {
		name, ok := strings.CutPrefix(w, "--")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, "=")
		if c.Flags().Lookup(name) == nil && c.InheritedFlags().Lookup(name) == nil && name != "help" {
			t.Errorf("%s: example %q: %s has no flag --%s", where, line, c.CommandPath(), name)
		}
	}
}

// --help shows the examples, the exit status, and switches without the
// [=true|false] that pflag gives every bool flag.
func TestHelpShowsExamplesAndPlainSwitches(t *testing.T) {
	o := gpuhost(t, "", "scan", "rootfs", "--help")
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	for _, want := range []string{"Examples:\n  # the pre-deploy gate", "\nExit status:\n  0  nothing failed", "\n      --no-color    "} {
		if !strings.Contains(o.stdout, want) {
			t.Errorf("scan rootfs --help lacks %q:\n%s", want, o.stdout)
		}
	}
	if strings.Contains(o.stdout, "[=true|false]") {
		t.Errorf("a switch is shown as taking a value:\n%s", o.stdout)
	}
}
