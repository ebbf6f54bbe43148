package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/agent"
	"github.com/gpuhost/gpuhost/render/diff"
	"github.com/gpuhost/gpuhost/render/escape"
	"github.com/gpuhost/gpuhost/reports"
)

// historyCommand reads the agent's run history.
func (a *app) historyCommand() *cobra.Command {
	var db string
	var limit int
	cmd := &cobra.Command{
		Use:   "history",
		Short: "List the agent's recorded runs, newest first",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.listRuns(cmd.Context(), db, limit)
		},
	}
	cmd.PersistentFlags().StringVar(&db, "db", defaultDB, "SQLite run history the agent writes")
	cmd.Flags().IntVar(&limit, "limit", 20, "show at most this many runs (0: all)")
	cmd.AddCommand(a.historyDiffCommand(&db))
	return cmd
}

// listRuns writes one line per run, a run that made no report showing why
// in place of its target, so a failed run is not mistaken for a clean one.
func (a *app) listRuns(ctx context.Context, db string, limit int) error {
	st, err := agent.OpenStoreReadOnly(ctx, db)
	if err != nil {
		return err
	}
	defer st.Close()
	runs, err := st.List(ctx, limit)
	if err != nil {
		return err
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTARTED\tDURATION\tEXIT\tFAIL\tERROR\tWAIVED\tTARGET")
	for _, r := range runs {
		target := r.Target
		if r.Error != "" {
			target = "(no report: " + r.Error + ")"
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%d\t%d\t%s\n", r.ID, r.StartedAt.UTC().Format(time.RFC3339),
			r.Duration.Round(time.Millisecond), r.ExitCode, r.Summary.ByStatus[reports.StatusFail],
			r.Summary.ByStatus[reports.StatusError], r.Summary.ByStatus[reports.StatusWaived], escape.Terminal(target))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return nil
}

// historyDiffCommand is history's diff subcommand. It takes db by pointer
// because the flag belongs to history and is parsed after this is built.
func (a *app) historyDiffCommand(db *string) *cobra.Command {
	var format string
	d := &cobra.Command{
		Use:   "diff RUN1 RUN2",
		Short: "Show what changed between two recorded runs: new failures, fixed, still failing",
		Long:  "Compare the reports of two recorded runs by id. Exit 1 when RUN2 fails a check RUN1 did not.",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			reps, err := runReports(cmd.Context(), *db, args)
			if err != nil {
				return err
			}
			res := diff.Compare(reps[0], reps[1], "run "+args[0], "run "+args[1])
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
	return d
}

// runReports fetches the reports of the two runs named on the command
// line, refusing a run that made none: a diff against a missing report
// would show every failure as fixed.
func runReports(ctx context.Context, db string, args []string) ([2]*reports.Report, error) {
	var reps [2]*reports.Report
	st, err := agent.OpenStoreReadOnly(ctx, db)
	if err != nil {
		return reps, err
	}
	defer st.Close()
	for i, arg := range args {
		id, err := strconv.ParseInt(arg, 10, 64)
		if err != nil || id <= 0 {
			return reps, fmt.Errorf("run %q: want a run id from gpuhost history", arg)
		}
		r, err := st.Get(ctx, id)
		if errors.Is(err, agent.ErrNoRun) {
			return reps, fmt.Errorf("run %d: not in %s", id, db)
		}
		if err != nil {
			return reps, err
		}
		if r.Report == nil {
			return reps, fmt.Errorf("run %d produced no report: %s", id, r.Error)
		}
		reps[i] = r.Report
	}
	return reps, nil
}
