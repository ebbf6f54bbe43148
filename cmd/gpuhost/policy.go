package main

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/policies"
	"github.com/gpuhost/gpuhost/policy/regotest"
	"github.com/gpuhost/gpuhost/render/escape"
)

func (a *app) policyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "policy",
		Short: "Inspect and test policy packs",
	}

	var pf policyFlags
	list := &cobra.Command{
		Use:   "list",
		Short: "List the checks of the pack",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := pf.engine(cmd.Context())
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			// FILE is the check's path in the pack, which reports give too;
			// for the embedded pack it is the end of the file's path in the
			// repository (iam/sudo_log.rego: facts/access/iam/sudo_log.rego).
			fmt.Fprintln(tw, "ID\tSEVERITY\tTARGETS\tFILE\tTITLE")
			for _, c := range e.Checks() {
				// A pack given with --policy is not trusted: its text must not
				// drive the terminal or break the table.
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", escape.Terminal(c.ID), escape.Terminal(c.Severity),
					escape.Terminal(strings.Join(c.Targets, ",")), escape.Terminal(c.File), escape.Terminal(c.Title))
			}
			fmt.Fprintf(tw, "\n%d checks, policy digest %s\n", len(e.Checks()), e.Digest())
			return tw.Flush()
		},
	}
	pf.register(list)

	var failUnder float64
	var verbose bool
	test := &cobra.Command{
		Use:   "test [DIR]",
		Short: "Run the pack's Rego tests with coverage (the embedded pack when no DIR)",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if failUnder < 0 || failUnder > 100 {
				return fmt.Errorf("--fail-under %g: want a percentage, 0 to 100", failUnder)
			}
			var src *engine.Source
			var err error
			if len(args) == 1 {
				src, err = engine.LoadPath(args[0], nil)
			} else {
				src, err = engine.LoadFS(policies.FS, "embedded")
			}
			if err != nil {
				return err
			}
			rep, err := regotest.Run(cmd.Context(), src)
			if err != nil {
				return err
			}
			return a.printTests(rep, failUnder, verbose)
		},
	}
	test.Flags().Float64Var(&failUnder, "fail-under", 0, "exit 1 when line coverage of the policies is below this percentage")
	test.Flags().BoolVarP(&verbose, "verbose", "v", false, "list every test, and the uncovered lines")

	cmd.AddCommand(list, test, a.policyDocCommand(), a.policyBundleCommand(), a.policyLintCommand(), a.policyExportCommand())
	return cmd
}

func (a *app) printTests(rep *regotest.Report, failUnder float64, verbose bool) error {
	counts := map[string]int{}
	for _, t := range rep.Results {
		counts[t.Status]++
		if verbose || t.Status == "fail" || t.Status == "error" {
			line := fmt.Sprintf("%-5s %s:%d %s.%s", strings.ToUpper(t.Status), t.File, t.Line, t.Package, t.Name)
			if t.Detail != "" {
				line += ": " + t.Detail
			}
			fmt.Fprintln(a.stdout, line)
		}
	}
	if verbose {
		for _, file := range sortedMapKeys(rep.Uncovered) {
			fmt.Fprintf(a.stdout, "uncovered %s: lines %v\n", file, rep.Uncovered[file])
		}
	}
	fmt.Fprintf(a.stdout, "%d passed, %d failed, %d errors, %d skipped; policy coverage %.1f%%\n",
		counts["pass"], counts["fail"], counts["error"], counts["skip"], rep.Coverage)
	if rep.Failed() > 0 {
		return &exitError{code: 1, err: fmt.Errorf("%d Rego tests failed", rep.Failed())}
	}
	if len(rep.Results) == 0 {
		return &exitError{code: 1, err: fmt.Errorf("no Rego tests found")}
	}
	if rep.Coverage < failUnder {
		return &exitError{code: 1, err: fmt.Errorf("policy coverage %.1f%% is under --fail-under %.1f%%", rep.Coverage, failUnder)}
	}
	return nil
}

func sortedMapKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
