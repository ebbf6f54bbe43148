package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/internal/waivers"
)

// waiversCommand groups commands that review waiver files.
func (a *app) waiversCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "waivers",
		Short: "Review waiver files",
	}

	var pf policyFlags
	var within int
	var strict bool
	var asOf string
	check := &cobra.Command{
		Use:   "check FILE",
		Short: "Report expired waivers, waivers for unknown checks, and waivers expiring soon",
		Long: "Validate a waiver file against the policy pack. Expired waivers no longer waive anything, and a\n" +
			"waiver whose id is not a check of the pack waives nothing (a typo, or a check that was removed).\n\n" +
			"Exit codes: 0 every waiver is current and names a check; 1 one is expired or names an unknown\n" +
			"check (or, with --strict, expires within --within days); 2 the file or the pack cannot be read.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if within < 0 {
				return untrusted(fmt.Errorf("--within %d: want a number of days, 0 or more", within))
			}
			now := time.Now()
			if asOf != "" {
				t, err := time.Parse(time.DateOnly, asOf)
				if err != nil {
					return untrusted(fmt.Errorf("--as-of %q: want a date, YYYY-MM-DD", asOf))
				}
				now = t
			}
			list, err := waivers.Load(args[0])
			if err != nil {
				return untrusted(err)
			}
			e, err := pf.engine(cmd.Context())
			if err != nil {
				return err
			}
			known := map[string]bool{}
			for _, c := range e.Checks() {
				known[c.ID] = true
			}
			return a.reviewWaivers(args[0], list, known, now, within, strict)
		},
	}
	pf.register(check)
	check.Flags().IntVar(&within, "within", 30, "warn about waivers that expire within this many days")
	check.Flags().BoolVar(&strict, "strict", false, "exit 1 when a waiver expires within --within days, too")
	check.Flags().StringVar(&asOf, "as-of", "", "review as of this date (YYYY-MM-DD) instead of today, e.g. a release date")
	cmd.AddCommand(check)
	return cmd
}

// reviewWaivers prints one line per waiver that needs attention and returns
// the exit code for them.
func (a *app) reviewWaivers(file string, list []waivers.Waiver, known map[string]bool, now time.Time, within int, strict bool) error {
	horizon := now.AddDate(0, 0, within)
	var expired, unknown, soon int
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	header := false
	row := func(problem string, n int, w waivers.Waiver, note string) {
		if !header {
			fmt.Fprintln(tw, "PROBLEM\tENTRY\tID\tTARGET\tEXPIRES\tAPPROVED BY\tNOTE")
			header = true
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\n", problem, n, safeText(w.ID), safeText(w.Target),
			w.Expires, safeText(w.ApprovedBy), note)
	}
	for i, w := range list {
		if !known[w.ID] {
			unknown++
			row("unknown-check", i+1, w, "no check of the pack has this id; the waiver waives nothing")
		}
		switch {
		case w.Expired(now):
			expired++
			row("expired", i+1, w, "no longer waives; the failure counts again")
		case w.Expired(horizon):
			soon++
			row("expiring", i+1, w, fmt.Sprintf("expires within %d days", within))
		}
	}
	if err := tw.Flush(); err != nil {
		return untrusted(err)
	}
	if header {
		fmt.Fprintln(a.stdout)
	}
	fmt.Fprintf(a.stdout, "%s: %d waivers as of %s; %d expired, %d for unknown checks, %d expiring within %d days\n",
		safeText(file), len(list), now.UTC().Format(time.DateOnly), expired, unknown, soon, within)
	switch {
	case expired > 0 || unknown > 0:
		return &exitError{code: 1}
	case strict && soon > 0:
		return &exitError{code: 1}
	}
	return nil
}

// safeText keeps text from a waiver file (which anyone may have edited) from
// carrying control characters to the reader's terminal.
func safeText(s string) string {
	out := []rune{}
	for _, r := range s {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			r = '?'
		}
		out = append(out, r)
	}
	return string(out)
}
