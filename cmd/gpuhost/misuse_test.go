package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// swapped is word with its first two letters swapped, a typo one edit away.
func swapped(word string) string {
	return word[1:2] + word[:1] + word[2:]
}

// TestMisuseExitsTwo walks every command path: a command that groups
// others, given none or a typo of one, and every command, given an unknown
// flag, a typo of one of its flags or fewer arguments than it takes, exits
// 2 with one line that names the command and the mistake, and the word
// meant where the typo is one edit away. Nothing runs: each mistake stops
// the command line before a command does anything.
func TestMisuseExitsTwo(t *testing.T) {
	var walk func(c *cobra.Command, path []string)
	misuse := func(args []string, want ...string) {
		t.Helper()
		o := gpuhost(t, "", args...)
		line := strings.TrimSuffix(o.stderr, "\n")
		if o.code != 2 || strings.Contains(line, "\n") || o.stdout != "" {
			t.Errorf("gpuhost %s: exit %d, want 2 with one line on stderr and nothing on stdout; got\nstdout %q\nstderr %q", strings.Join(args, " "), o.code, o.stdout, o.stderr)
			return
		}
		for _, w := range want {
			if !strings.Contains(line, w) {
				t.Errorf("gpuhost %s: %q does not say %q", strings.Join(args, " "), line, w)
			}
		}
	}
	walk = func(c *cobra.Command, path []string) {
		cmdPath := strings.Join(append([]string{"gpuhost"}, path...), " ")
		at := func(extra string) []string { return append(append([]string{}, path...), extra) }
		// Only a command that cannot run without arguments is run bare.
		if c.Args != nil && c.Args(c, nil) != nil {
			if c.HasSubCommands() {
				misuse(path, cmdPath+": needs a command")
			} else {
				misuse(path, cmdPath+": ", "usage: "+cmdPath)
			}
		}
		misuse(at("--no-such-flag"), cmdPath+": unknown flag: --no-such-flag")
		var flag string
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if flag == "" && !f.Hidden && len(f.Name) >= 4 && f.Name != "help" {
				flag = f.Name
			}
		})
		if flag != "" {
			misuse(at("--"+swapped(flag)), cmdPath+": unknown flag: --"+swapped(flag), `did you mean "--`+flag+`"`)
		}
		for _, sub := range c.Commands() {
			if !sub.IsAvailableCommand() {
				continue
			}
			if len(sub.Name()) >= 4 {
				misuse(at(swapped(sub.Name())), cmdPath+`: unknown command "`+swapped(sub.Name())+`"`, `did you mean "`+sub.Name()+`"`)
			}
			walk(sub, at(sub.Name()))
		}
	}
	walk((&app{}).rootCommand(), nil)
}
