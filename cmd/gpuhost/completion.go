package main

import (
	"io/fs"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gpuhost/gpuhost/policies"
	"github.com/gpuhost/gpuhost/render/report"
)

// addCompletions teaches the shell completions (gpuhost completion bash,
// zsh, fish) the values of every flag that takes one of a fixed set: the
// choices each such flag checks, report formats before --report's "=",
// and the compliance profiles the embedded pack ships.
func addCompletions(root *cobra.Command) {
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if comp := flagValues(f); comp != nil {
				// A flag inherited by a subcommand is registered once, on
				// the command that owns it.
				_ = c.RegisterFlagCompletionFunc(f.Name, comp)
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// flagValues completes f's value, or is nil for a flag that takes any.
func flagValues(f *pflag.Flag) cobra.CompletionFunc {
	fixed := func(values []string, d cobra.ShellCompDirective) cobra.CompletionFunc {
		return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) { return values, d }
	}
	switch v := f.Value.(type) {
	case *choiceValue:
		return fixed(v.choices, cobra.ShellCompDirectiveNoFileComp)
	case *choiceListValue:
		return fixed(v.choices, cobra.ShellCompDirectiveNoFileComp)
	case reportsValue:
		// FORMAT=, then the shell's own file completion for the path
		// would need a second word; the format is what is worth listing.
		var formats []string
		for _, name := range report.Formats() {
			formats = append(formats, name+"=")
		}
		return fixed(formats, cobra.ShellCompDirectiveNoSpace|cobra.ShellCompDirectiveNoFileComp)
	}
	if f.Name == "compliance" {
		return fixed(shippedProfiles(), cobra.ShellCompDirectiveNoFileComp)
	}
	return nil
}

// shippedProfiles are the compliance profiles of the embedded pack, by
// folder name, read without compiling the pack: a completion must answer
// at once.
func shippedProfiles() []string {
	matches, _ := fs.Glob(policies.FS, "compliance/*/profile.yaml")
	var names []string
	for _, m := range matches {
		names = append(names, strings.Split(m, "/")[1])
	}
	return names
}
