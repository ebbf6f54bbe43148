package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/render/diff"
)

// reportCommand groups commands that read saved reports.
func (a *app) reportCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Work with saved gpuhost.report/v1 documents",
	}

	var format string
	d := &cobra.Command{
		Use:   "diff OLD.json NEW.json",
		Short: "Compare two JSON reports check by check",
		Long: "Compare two gpuhost.report/v1 JSON documents by check id: new failures, fixed checks, checks still\n" +
			"failing, severity changes, waivers added and expired, and checks added to or removed from the pack.\n\n" +
			"Exit codes: 0 no new failures; 1 something fails (or errors) that did not before; 2 an input is unreadable.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			oldRep, err := diff.Load(args[0])
			if err != nil {
				return err
			}
			newRep, err := diff.Load(args[1])
			if err != nil {
				return err
			}
			res := diff.Compare(oldRep, newRep, args[0], args[1])
			if err := writeDiff(a.stdout, res, format); err != nil {
				return err
			}
			if res.HasNewFailures() {
				return &exitError{code: 1}
			}
			return nil
		},
	}
	d.Flags().Var(choiceVar(&format, "table", diff.Formats()...), "format", "output format: "+strings.Join(diff.Formats(), ", "))
	cmd.AddCommand(d)
	return cmd
}

// writeDiff writes a report diff in format to w.
func writeDiff(w io.Writer, d *diff.Diff, format string) error {
	r, err := diff.Lookup(format)
	if err != nil {
		return err
	}
	if err := r.Render(w, d); err != nil {
		return fmt.Errorf("writing diff: %w", err)
	}
	return nil
}
