package main

import (
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

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

	var tf policyFlags
	tailoring := &cobra.Command{
		Use:   "tailoring NAME",
		Short: "Write a tailored profile as an XCCDF tailoring file for OpenSCAP",
		Long: "Write the compliance profile NAME's tailoring as an XCCDF 1.2 Tailoring document: the XCCDF profile it " +
			"starts from with the tailored controls' rules deselected, for `oscap xccdf eval --tailoring-file FILE " +
			"--profile " + "xccdf_dev.gpuhost_profile_NAME`, so that OpenSCAP judges the same rules gpuhost does.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			e, err := tf.engine(cmd.Context())
			if err != nil {
				return err
			}
			p, err := complianceProfile(e, args[0])
			if err != nil {
				return err
			}
			if err := compliance.WriteXCCDFTailoring(a.stdout, p, time.Now()); err != nil {
				return fmt.Errorf("compliance tailoring %s: %w", args[0], err)
			}
			return nil
		},
	}
	tf.register(tailoring)
	cmd.AddCommand(list, tailoring)
	return cmd
}
