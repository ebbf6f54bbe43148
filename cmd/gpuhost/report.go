package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/internal/userfile"
	"github.com/gpuhost/gpuhost/render/diff"
	"github.com/gpuhost/gpuhost/reports"
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
			"failing, severity changes, waivers added and expired, and checks added to or removed from the pack.",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			oldRep, err := loadReport(args[0])
			if err != nil {
				return err
			}
			newRep, err := loadReport(args[1])
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

// maxDiffReport bounds a report read for diff, as render/diff bounds one.
const maxDiffReport = 64 << 20

// loadReport reads a saved report for diff. It is opened as every file an
// operator names is, so that a FIFO or a device is refused at once rather
// than read from until it ends.
func loadReport(file string) (*reports.Report, error) {
	data, err := userfile.Read(file, maxDiffReport)
	if err != nil {
		return nil, fmt.Errorf("reading report: %w", err)
	}
	rep, err := diff.Parse(data, file)
	if problem, ok := jsonProblem(err); ok {
		return nil, fmt.Errorf("report %s: %s; diff compares gpuhost.report/v1 JSON documents, as scan --format json or --report json=FILE writes them", file, problem)
	}
	return rep, err
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
