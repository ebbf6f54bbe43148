package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// usageError is a command line the command cannot take: an unknown or
// missing command, a missing or extra argument, an unknown flag. It exits 2,
// as any command line that judged nothing must: a CI job with a typo in its
// gpuhost line fails instead of passing.
type usageError struct {
	cmd *cobra.Command
	err error
}

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

// line is the one line a usage error prints: the mistake, the nearest valid
// word where there is one, and where the full usage is.
func (e *usageError) line() string {
	return fmt.Sprintf("%s: %v (see '%s --help')", e.cmd.CommandPath(), e.err, e.cmd.CommandPath())
}

// usageOnMisuse makes every command refuse a command line it cannot take
// with a usageError: its argument check and flag parsing, and, for a
// command that only groups others (scan, policy, report ...), any word
// that is not one of them, or none at all, which cobra would otherwise
// answer with help and exit 0.
func usageOnMisuse(cmd *cobra.Command) {
	if cmd.HasSubCommands() && !cmd.Runnable() {
		cmd.Args = func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return &usageError{cmd: c, err: fmt.Errorf("needs a command: %s", strings.Join(commandNames(c), ", "))}
			}
			return &usageError{cmd: c, err: fmt.Errorf("unknown command %q%s", args[0], nearest(args[0], commandNames(c)))}
		}
		// Runnable, so that cobra checks the arguments above; they never pass.
		cmd.RunE = func(*cobra.Command, []string) error { return nil }
	} else if check := cmd.Args; check != nil {
		cmd.Args = func(c *cobra.Command, args []string) error {
			err := check(c, args)
			switch {
			case err == nil:
				return nil
			case c.HasSubCommands() && len(args) > 0:
				// A command that runs alone and groups others (history).
				return &usageError{cmd: c, err: fmt.Errorf("unknown command %q%s", args[0], nearest(args[0], commandNames(c)))}
			}
			return &usageError{cmd: c, err: fmt.Errorf("%w; usage: %s", err, c.UseLine())}
		}
	}
	cmd.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return &usageError{cmd: c, err: fmt.Errorf("%w%s", err, nearestFlag(c, err))}
	})
	for _, sub := range cmd.Commands() {
		usageOnMisuse(sub)
	}
}

// commandNames are the commands c groups that a user may type.
func commandNames(c *cobra.Command) []string {
	var names []string
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			names = append(names, sub.Name())
		}
	}
	slices.Sort(names)
	return names
}

// nearestFlag names, after pflag's error about an unknown flag, the flag of
// c nearest to the one typed.
func nearestFlag(c *cobra.Command, err error) string {
	msg := err.Error()
	var typed string
	switch {
	case strings.HasPrefix(msg, "unknown flag: --"):
		typed = strings.TrimPrefix(msg, "unknown flag: --")
	case strings.HasPrefix(msg, "unknown shorthand flag: "):
		// "unknown shorthand flag: 'x' in -xyz": no word to compare.
		return ""
	default:
		return ""
	}
	var names []string
	c.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	return strings.Replace(nearest(typed, names), `"`, `"--`, 1)
}

// nearest returns `; did you mean "w"?` for the word of words nearest to
// typed, when one is near enough to be the word meant: one edit away (two
// for a word of six letters or more), or typed is a prefix of it.
func nearest(typed string, words []string) string {
	best, bestD := "", -1
	for _, w := range words {
		d := editDistance(strings.ToLower(typed), strings.ToLower(w))
		if strings.HasPrefix(w, typed) && typed != "" {
			d = min(d, 1)
		}
		if bestD < 0 || d < bestD {
			best, bestD = w, d
		}
	}
	near := 1
	if len(best) >= 6 {
		near = 2
	}
	if bestD < 0 || bestD > near {
		return ""
	}
	return fmt.Sprintf("; did you mean %q?", best)
}

// editDistance is the optimal string alignment distance of a and b: the
// insertions, deletions, substitutions and swaps of neighbours that turn one
// into the other (so "imgae" is one edit from "image").
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
