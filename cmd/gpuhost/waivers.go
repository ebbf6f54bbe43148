package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/internal/userfile"
	"github.com/gpuhost/gpuhost/render/escape"
	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan/waivers"
)

// waiverFlags choose a waiver file and the key its signature must verify
// with. Every command that applies waivers takes them.
type waiverFlags struct {
	file string
	key  string
	alg  string
}

func (w *waiverFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&w.file, "waivers", "", "waiver file (YAML list of id, target, justification, approved_by, expires, ticket, optional scope)")
	w.registerKey(cmd)
}

func (w *waiverFlags) registerKey(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&w.key, "waivers-key", "", "public key (PEM), or HMAC secret, that the waiver file's signature FILE.sig must verify with (default: --verification-key)")
	f.StringVar(&w.alg, "waivers-alg", "", "signing algorithm of --waivers-key"+keyAlgHelp)
}

// verification returns the key the waiver file must be signed with, and the
// key file's name: --waivers-key, else the pack's --verification-key, so
// that a scan that insists on a signed pack never takes unsigned waivers.
// No key: nil.
func (w *waiverFlags) verification(pf *policyFlags) (*waivers.Key, string, error) {
	file, alg, keyFlag, algFlag := w.key, w.alg, "--waivers-key", "--waivers-alg"
	if file == "" {
		file, alg, keyFlag, algFlag = pf.verificationKey, pf.verificationAlg, "--verification-key", "--verification-alg"
	}
	if file == "" {
		return nil, "", nil
	}
	pem, alg, err := readKey(keyFlag, file, algFlag, alg, false)
	if err != nil {
		return nil, "", err
	}
	return &waivers.Key{PEM: pem, Algorithm: alg}, file, nil
}

// load reads the waiver file, verifying its signature when a key applies.
// No --waivers: nil, nil.
func (w *waiverFlags) load(pf *policyFlags) ([]waivers.Waiver, error) {
	if w.file == "" {
		if w.key != "" {
			return nil, errors.New("--waivers-key without --waivers")
		}
		return nil, nil
	}
	key, _, err := w.verification(pf)
	if err != nil {
		return nil, err
	}
	if key == nil {
		return waivers.Load(w.file)
	}
	return waivers.LoadVerified(w.file, *key)
}

// waiversCommand groups commands that review and sign waiver files.
func (a *app) waiversCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "waivers",
		Short: "Review and sign waiver files",
	}
	cmd.AddCommand(a.waiversCheckCommand(), a.waiversSignCommand())
	return cmd
}

func (a *app) waiversCheckCommand() *cobra.Command {
	var pf policyFlags
	var wf waiverFlags
	var within int
	var strict bool
	var asOf string
	check := &cobra.Command{
		Use:   "check FILE",
		Short: "Report invalid, unsigned, expired, out-of-scope and soon-expiring waivers, and waivers for unknown checks",
		Long: "Validate a waiver file against the policy pack. Every entry needs id, target, justification,\n" +
			"approved_by, expires and ticket; a scope is optional. Expired waivers no longer waive anything; a\n" +
			"waiver whose id is not a check of the pack, or whose scope names only target kinds the check does\n" +
			"not apply to, waives nothing. With --verification-key (or --waivers-key) the signature FILE.sig\n" +
			"must verify, as a scan with that key requires.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if within < 0 {
				return fmt.Errorf("--within %d: want a number of days, 0 or more", within)
			}
			now := time.Now()
			if asOf != "" {
				t, err := time.Parse(time.DateOnly, asOf)
				if err != nil {
					return fmt.Errorf("--as-of %q: want a date, YYYY-MM-DD", asOf)
				}
				now = t
			}
			wf.file = args[0]
			list, err := wf.load(&pf)
			if err != nil {
				return err
			}
			_, keyFile, _ := wf.verification(&pf)
			e, err := pf.engine(cmd.Context())
			if err != nil {
				return err
			}
			known := map[string]engine.Check{}
			for _, c := range e.Checks() {
				known[c.ID] = c
			}
			return a.reviewWaivers(waiverReview{file: args[0], keyFile: keyFile, list: list, known: known,
				now: now, within: within, strict: strict})
		},
	}
	pf.register(check)
	wf.registerKey(check)
	check.Flags().IntVar(&within, "within", 30, "warn about waivers that expire within this many days")
	check.Flags().BoolVar(&strict, "strict", false, "exit 1 when a waiver expires within --within days, too")
	check.Flags().StringVar(&asOf, "as-of", "", "review as of this date (YYYY-MM-DD) instead of today, e.g. a release date")
	return check
}

func (a *app) waiversSignCommand() *cobra.Command {
	var keyFile, alg, output string
	sign := &cobra.Command{
		Use:   "sign FILE --signing-key KEY",
		Short: "Write FILE.sig, the detached signature a scan with --verification-key requires",
		Long: "Sign a waiver file as policy bundles are signed: FILE.sig holds a .signatures.json whose JWT lists\n" +
			"the file's SHA-256. The file is validated first; an invalid file is not signed. Any change to the\n" +
			"file after signing makes scans with the verification key refuse it (exit 2).",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if keyFile == "" {
				return errors.New("--signing-key is required")
			}
			pem, alg, err := readKey("--signing-key", keyFile, "--signing-alg", alg, true)
			if err != nil {
				return err
			}
			data, err := userfile.Read(args[0], waivers.MaxFile)
			if err != nil {
				return fmt.Errorf("reading waivers: %w", err)
			}
			sig, err := waivers.Sign(data, args[0], waivers.Key{PEM: pem, Algorithm: alg})
			if err != nil {
				return err
			}
			if output == "" {
				output = waivers.SignatureFile(args[0])
			}
			if err := writeFileAtomic(output, sig); err != nil {
				return err
			}
			a.log.Info("waivers signed", "file", args[0], "signature", output)
			return nil
		},
	}
	f := sign.Flags()
	f.StringVar(&keyFile, "signing-key", "", "private key (PEM) to sign with, or the HMAC secret for HS algorithms")
	f.StringVar(&alg, "signing-alg", "", "JWT signing algorithm of --signing-key"+keyAlgHelp)
	f.StringVarP(&output, "output", "o", "", "write the signature here (default: FILE.sig, where scans look for it)")
	return sign
}

// waiverReview is what `waivers check` looks at.
type waiverReview struct {
	file    string
	keyFile string // empty: the signature was not checked
	list    []waivers.Waiver
	known   map[string]engine.Check
	now     time.Time
	within  int
	strict  bool
}

// reviewWaivers prints one line per waiver that needs attention, the
// signature status and a summary, and returns the exit code for them.
func (a *app) reviewWaivers(r waiverReview) error {
	horizon := r.now.AddDate(0, 0, r.within)
	var expired, unknown, outOfScope, soon int
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	header := false
	row := func(problem string, n int, w waivers.Waiver, note string) {
		if !header {
			fmt.Fprintln(tw, "PROBLEM\tENTRY\tID\tTARGET\tSCOPE\tEXPIRES\tAPPROVED BY\tTICKET\tNOTE")
			header = true
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", problem, n, escape.Terminal(w.ID), escape.Terminal(w.Target),
			escape.Terminal(scopeText(w.Scope)), w.Expires, escape.Terminal(w.ApprovedBy), escape.Terminal(w.Ticket), note)
	}
	for i, w := range r.list {
		c, ok := r.known[w.ID]
		switch {
		case !ok:
			unknown++
			row("unknown-check", i+1, w, "no check of the pack has this id; the waiver waives nothing")
		case w.Scope != nil && len(w.Scope.Kinds) > 0 && !slices.ContainsFunc(w.Scope.Kinds, func(k string) bool { return slices.Contains(c.Targets, k) }):
			outOfScope++
			row("out-of-scope", i+1, w, "the check applies only to "+strings.Join(c.Targets, ", ")+" targets; the waiver waives nothing")
		}
		switch {
		case w.Expired(r.now):
			expired++
			row("expired", i+1, w, "no longer waives; the failure counts again")
		case w.Expired(horizon):
			soon++
			row("expiring", i+1, w, fmt.Sprintf("expires within %d days", r.within))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if header {
		fmt.Fprintln(a.stdout)
	}
	if r.keyFile != "" {
		fmt.Fprintf(a.stdout, "signature: %s verified with %s\n", escape.Terminal(waivers.SignatureFile(r.file)), escape.Terminal(r.keyFile))
	} else {
		fmt.Fprintln(a.stdout, "signature: not checked (no --verification-key or --waivers-key)")
	}
	fmt.Fprintf(a.stdout, "%s: %d waivers as of %s; %d expired, %d for unknown checks, %d expiring within %d days, %d out of scope\n",
		escape.Terminal(r.file), len(r.list), r.now.UTC().Format(time.DateOnly), expired, unknown, soon, r.within, outOfScope)
	switch {
	case expired > 0 || unknown > 0 || outOfScope > 0:
		return &exitError{code: 1}
	case r.strict && soon > 0:
		return &exitError{code: 1}
	}
	return nil
}

// scopeText is a waiver scope on one line, as reports word it; "-" when
// there is none.
func scopeText(s *waivers.Scope) string {
	if s == nil {
		return "-"
	}
	return reports.WaiverScope{Kinds: s.Kinds, Hosts: s.Hosts}.String()
}
