package main

import (
	"errors"
	"fmt"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/policy/compliance"
	"github.com/gpuhost/gpuhost/render/escape"
	"github.com/gpuhost/gpuhost/scan"
)

// complianceProfile is the profile --compliance names; a name the pack
// does not have is a usage error that names the nearest.
func complianceProfile(e *engine.Engine, name string) (*compliance.Profile, error) {
	p, err := scan.ComplianceProfile(e, name)
	var unknown *compliance.UnknownError
	if errors.As(err, &unknown) {
		return nil, fmt.Errorf("--compliance: %w%s", err, nearest(name, unknown.Known))
	}
	return p, err
}

func (a *app) complianceCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "compliance",
		Short: "List the compliance profiles a scan can judge per control (--compliance)",
	}
	var pf policyFlags
	list := &cobra.Command{
		Use:   "list",
		Short: "List the pack's compliance profiles, with their benchmarks and how many of their rules gpuhost judges",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := pf.engine(cmd.Context())
			if err != nil {
				return err
			}
			set, err := scan.ComplianceProfiles(e)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tBENCHMARK\tVERSION\tCONTROLS\tRULES\tJUDGED\tTITLE")
			for _, name := range set.Names() {
				p, _ := set.Get(name)
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%s\n", escape.Terminal(p.Name), escape.Terminal(p.Benchmark.Title),
					escape.Terminal(p.Benchmark.Version), len(p.Controls), p.RuleCount(), p.JudgedRuleCount(), escape.Terminal(p.Title))
			}
			return tw.Flush()
		},
	}
	pf.register(list)
	cmd.AddCommand(list)
	return cmd
}
