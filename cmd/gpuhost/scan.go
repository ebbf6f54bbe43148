package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/engine/fleet"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/render/escape"
	"github.com/gpuhost/gpuhost/render/report"
	"github.com/gpuhost/gpuhost/render/summary"
	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan"
	"github.com/gpuhost/gpuhost/scan/waivers"
	"github.com/gpuhost/gpuhost/target"
)

// policyFlags chooses the policy pack and its parameters.
type policyFlags struct {
	policies        []string
	extend          []string
	params          string
	verificationKey string
	verificationAlg string
}

func (p *policyFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringArrayVar(&p.policies, "policy", nil, "policy directory or OPA bundle (.tar.gz) replacing the embedded pack (repeatable)")
	f.StringArrayVar(&p.extend, "extend-policy", nil, "policy directory or bundle added to the embedded pack (repeatable)")
	f.StringVar(&p.params, "params", "", "parameters file (YAML or JSON), read as data.gpuhost.params")
	f.StringVar(&p.verificationKey, "verification-key", "", "public key (PEM) that policy bundles must be signed with")
	f.StringVar(&p.verificationAlg, "verification-alg", "", "signing algorithm of --verification-key"+keyAlgHelp)
}

// pack is the policy pack the flags name.
func (p *policyFlags) pack() scan.Pack {
	return scan.Pack{Policies: p.policies, Extend: p.extend, Params: p.params,
		VerificationKey: p.verificationKey, VerificationAlg: p.verificationAlg}
}

func (p *policyFlags) engine(ctx context.Context, extra ...engine.Option) (*engine.Engine, error) {
	// Name the flag, not just the file, when a file it names is missing.
	named := [][2]string{{"--params", p.params}, {"--verification-key", p.verificationKey}}
	for _, dir := range p.policies {
		named = append(named, [2]string{"--policy", dir})
	}
	for _, dir := range p.extend {
		named = append(named, [2]string{"--extend-policy", dir})
	}
	for _, n := range named {
		if _, err := os.Stat(n[1]); n[1] != "" && err != nil {
			return nil, fmt.Errorf("reading %s: %w", n[0], err)
		}
	}
	if p.verificationKey != "" {
		_, alg, err := readKey("--verification-key", p.verificationKey, "--verification-alg", p.verificationAlg, false)
		if err != nil {
			return nil, err
		}
		p.verificationAlg = alg
	}
	e, err := p.pack().Engine(ctx, extra...)
	if err != nil {
		return nil, err
	}
	return e, nil
}

// scanFlags are the flags every `scan` subcommand takes.
type scanFlags struct {
	policyFlags
	waivers waiverFlags
	failOn  string
	// failOnSkip, when set, fails the scan on a check at or above it that
	// could not be evaluated.
	failOnSkip string
	// exitCode is the exit code of a scan that fails at --fail-on, in place
	// of 1 (--exit-code).
	exitCode int
	// checks and skipChecks choose the checks reported (scan.Selection).
	checks, skipChecks []string
	// compliance names the compliance profile each report judges.
	compliance string
	format     string
	// output is where the --format output goes instead of stdout.
	output  string
	reports []reportSpec
	noColor bool
	// notApplicable lists checks that do not apply to the target in the
	// table, instead of counting them on one line.
	notApplicable bool
}

func (s *scanFlags) register(cmd *cobra.Command) {
	s.policyFlags.register(cmd)
	f := cmd.Flags()
	s.waivers.register(cmd)
	f.Var(choiceVar(&s.failOn, "high", append(slices.Clone(reports.Severities), reports.Never)...), "fail-on", "exit 1 when a check fails at or above: "+strings.Join(reports.Severities, ", ")+"; "+reports.Never+" never does (an advisory scan still exits 2 when it cannot be trusted)")
	f.Var(exitCodeValue{&s.exitCode}, "exit-code", "the exit code when a check fails at or above --fail-on, instead of 1 (1 or 3 to 125; 2 is a scan that cannot be trusted)")
	f.Var(optionalChoiceVar(&s.failOnSkip, reports.Severities...), "fail-on-skip", "also exit 1 when a check at or above this severity was skipped or errored (default: never)")
	f.StringSliceVar(&s.checks, "checks", nil, "report only these checks: ids, globs over ids (GH-SSH-*), pack folders (ssh, iam) or severities, comma-separated or repeated")
	f.StringSliceVar(&s.skipChecks, "skip-checks", nil, "leave these checks out of the report, named as --checks names them")
	f.StringVar(&s.compliance, "compliance", "", "also judge this compliance profile of the pack per control (gpuhost compliance list names them)")
	f.Var(optionalChoiceVar(&s.format, report.Formats()...), "format", "format on stdout: "+strings.Join(report.Formats(), ", ")+" (default: table, colored on a terminal)")
	f.StringVarP(&s.output, "output", "o", "", "write the --format output to this file, atomically, instead of stdout")
	f.Var(reportsValue{&s.reports}, "report", "also write FORMAT=PATH (repeatable), atomically")
	f.BoolVar(&s.noColor, "no-color", false, "never color the table")
	f.BoolVar(&s.notApplicable, "show-not-applicable", false, "list every check that does not apply to the target in the table, instead of counting them on one line")
}

// scanner builds the pipeline. A single scan takes the plain engine path;
// fleet evaluation (scan facts, the agent's repeated runs) passes the memo.
func (s *scanFlags) scanner(ctx context.Context, wrap func(*engine.Engine) scan.Evaluator) (*scan.Scanner, error) {
	e, err := s.engine(ctx)
	if err != nil {
		return nil, err
	}
	return s.scannerOf(e, wrap)
}

// scannerOf builds the pipeline around an engine already compiled.
func (s *scanFlags) scannerOf(e *engine.Engine, wrap func(*engine.Engine) scan.Evaluator) (*scan.Scanner, error) {
	var eval scan.Evaluator = e
	if wrap != nil {
		eval = wrap(e)
	}
	if s.compliance == "" && (s.format == "xccdf" || slices.ContainsFunc(s.reports, func(r reportSpec) bool { return r.format == "xccdf" })) {
		return nil, fmt.Errorf("xccdf: %w", report.ErrNoCompliance)
	}
	var opts []scan.Option
	list, err := s.waivers.load(&s.policyFlags)
	if err != nil {
		return nil, err
	}
	if list != nil {
		opts = append(opts, scan.WithWaivers(list))
		warnWaivers(s.waivers.file, list, e.Checks(), time.Now())
	}
	selected, err := scan.Selection{Only: s.checks, Skip: s.skipChecks}.Compile(e.Checks())
	var unmatched *scan.UnmatchedError
	if errors.As(err, &unmatched) {
		flag := "--skip-checks"
		if slices.Contains(s.checks, unmatched.Pattern) {
			flag = "--checks"
		}
		return nil, fmt.Errorf("%s: %w%s", flag, err, nearest(unmatched.Pattern, unmatched.Words))
	}
	if err != nil {
		return nil, fmt.Errorf("--checks or --skip-checks: %w", err)
	}
	if selected != nil {
		opts = append(opts, scan.WithSelection(selected))
	}
	if s.compliance != "" {
		p, err := complianceProfile(e, s.compliance)
		if err != nil {
			return nil, err
		}
		opts = append(opts, scan.WithCompliance(p))
	}
	opts = append(opts, scan.WithJudgement(s.thresholds(), s.checks, s.skipChecks))
	return scan.New(eval, opts...), nil
}

// warnWaivers says on stderr, at every scan, what in the waiver file waives
// nothing: an expired waiver, and one whose id names no check of the pack
// (a typo, or a check since renamed). Both leave the verdict as if the
// waiver were absent, which a reviewer reading only the exit code would
// not see; `waivers check` says the same for CI.
func warnWaivers(file string, list []waivers.Waiver, checks []engine.Check, now time.Time) {
	ids := make([]string, len(checks))
	for i, c := range checks {
		ids[i] = c.ID
	}
	for _, w := range list {
		switch {
		case !slices.Contains(ids, w.ID):
			slog.Warn("a waiver names no check of the pack, so it waives nothing"+nearest(w.ID, ids), "file", file, "id", w.ID, "ticket", w.Ticket)
		case w.Expired(now):
			slog.Warn("a waiver has expired, so it no longer waives", "file", file, "id", w.ID, "expires", w.Expires, "ticket", w.Ticket)
		}
	}
}

// memoized is the evaluator of a fleet scan: hosts of one image share most of
// what the checks read, and the memo answers those checks once.
func memoized(e *engine.Engine) scan.Evaluator { return fleet.New(e, fleet.DefaultEntries) }

// stdoutRenderer picks the stdout format: the flag, else a table, colored
// when stdout is a terminal.
func (a *app) stdoutRenderer(s *scanFlags) report.Renderer {
	if s.format != "" {
		r, _ := report.Lookup(s.format)
		return r
	}
	f, ok := a.stdout.(*os.File)
	terminal := ok && term.IsTerminal(int(f.Fd()))
	width := 0
	if terminal {
		width = columns(os.Getenv, func() (int, error) {
			w, _, err := term.GetSize(int(f.Fd()))
			return w, err
		})
	}
	return report.NewTable(report.WithColor(colorful(s.noColor, os.Getenv, terminal)), report.WithWidth(width),
		report.WithNotApplicable(s.notApplicable))
}

// columns is the terminal's width for the table: COLUMNS where the shell
// exports it (a user's way to ask for another width), else what the
// terminal says; zero, for a table at its full width, when neither says.
func columns(env func(string) string, size func() (int, error)) int {
	if n, err := strconv.Atoi(env("COLUMNS")); err == nil && n > 0 {
		return n
	}
	if n, err := size(); err == nil && n > 0 {
		return n
	}
	return 0
}

// colorful says whether the table is colored: only on a terminal, and not
// with --no-color, NO_COLOR (no-color.org) or a terminal that says it is
// dumb.
func colorful(noColor bool, env func(string) string, terminal bool) bool {
	return terminal && !noColor && env("NO_COLOR") == "" && env("TERM") != "dumb"
}

// emit writes one report to stdout and to every --report file, and returns
// the exit code for it.
func (a *app) emit(s *scanFlags, rep *reports.Report) error {
	err := a.toOutput(s, func() error {
		if err := a.stdoutRenderer(s).Render(a.stdout, rep); err != nil {
			return fmt.Errorf("writing report: %w", err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, spec := range s.reports {
		if err := report.WriteFile(spec.path, spec.renderer, rep); err != nil {
			return err
		}
		a.log.Info("report written", "format", spec.format, "path", spec.path)
	}
	return s.exit(scan.ExitCode([]*reports.Report{rep}, s.thresholds()))
}

// toOutput runs write with stdout sent to --output, when it is set: the
// file appears whole once write has given a verdict (nil, or an exit code
// of a failing or untrusted scan), and not at all when the command stopped
// without one, so a CI job never reads half a report or an old one as new.
func (a *app) toOutput(s *scanFlags, write func() error) error {
	if s.output == "" {
		return write()
	}
	f, err := report.CreateAtomic(s.output)
	if err != nil {
		return fmt.Errorf("--output: %w", err)
	}
	stdout := a.stdout
	a.stdout = f
	err = write()
	a.stdout = stdout
	var verdict *exitError
	if err != nil && !errors.As(err, &verdict) {
		f.Abort()
		return err
	}
	if cerr := f.Commit(); cerr != nil {
		return fmt.Errorf("--output: %w", cerr)
	}
	a.log.Info("report written", "path", s.output)
	return err
}

func (s *scanFlags) thresholds() scan.Thresholds {
	return scan.Thresholds{FailOn: s.failOn, FailOnSkip: s.failOnSkip}
}

// exit turns a scan's exit code into the command's error, with --exit-code
// in place of a failure's 1.
func (s *scanFlags) exit(code int) error {
	switch code {
	case scan.ExitPass:
		return nil
	case scan.ExitFail:
		return &exitError{code: max(s.exitCode, scan.ExitFail)}
	}
	return &exitError{code: code}
}

type hostFlags struct {
	root             string
	probeTimeout     time.Duration
	probeConcurrency int
}

func (h *hostFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&h.root, "host-root", "/", "where the host's root filesystem is mounted (a DaemonSet mounts it at /host)")
	cmd.Flags().Var(timeoutVar(&h.probeTimeout, 2*time.Second), "probe-timeout", "timeout of one TLS handshake probe")
	cmd.Flags().Var(countVar(&h.probeConcurrency, 16), "probe-concurrency", "TLS probes run at once")
}

func (a *app) collectOptions(h *hostFlags) target.Options {
	o := target.Options{Log: a.log, Budget: a.budget}
	o.Budget.KDFMemory = int64(a.kdfMemMiB) << 20
	o.Budget.Memory = int64(a.maxMemMiB) << 20
	if h != nil {
		o.ProbeTimeout, o.ProbeConcurrency = h.probeTimeout, h.probeConcurrency
	}
	if a.trivyDB != "" || len(a.extraCollectors) > 0 {
		o.Collectors = append(target.All(), a.extraCollectors...)
		if a.trivyDB != "" {
			o.Collectors = append(o.Collectors, vulnerabilityCollector(a.trivyDB))
		}
	}
	return o
}

// logCollectorProblems tells the operator, on stderr, which collectors did
// not produce facts and why.
func (a *app) logCollectorProblems(f *facts.Facts) {
	for name, st := range f.Collectors {
		if st.Status == facts.StatusError {
			a.log.Error("collector failed; checks that need it will error", "collector", name, "reason", st.Reason)
		}
	}
}

func (a *app) scanCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scan",
		Short: "Evaluate a target against the policy pack and report",
	}

	var rf scanFlags
	rootfs := &cobra.Command{
		Use:   "rootfs DIR",
		Short: "Scan an unpacked image root filesystem",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.scanCollected(cmd.Context(), &rf, func(ctx context.Context) (*facts.Facts, error) {
				return target.Rootfs(ctx, args[0], a.collectOptions(nil))
			})
		},
	}
	rf.register(rootfs)

	var hf scanFlags
	var hostOpts hostFlags
	host := &cobra.Command{
		Use:   "host",
		Short: "Scan the running host",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.scanCollected(cmd.Context(), &hf, func(ctx context.Context) (*facts.Facts, error) {
				return target.Host(ctx, hostOpts.root, a.collectOptions(&hostOpts))
			})
		},
	}
	hf.register(host)
	hostOpts.register(host)

	var ff scanFlags
	var workers int
	var summary bool
	saved := &cobra.Command{
		Use:   "facts [FILE...]",
		Short: "Evaluate saved facts documents (files, or NDJSON on stdin with no FILE or '-')",
		Long: "Evaluate saved gpuhost.facts/v1 documents. Each FILE holds one JSON document, or many as NDJSON.\n" +
			"With no FILE, or '-', documents are read as NDJSON from stdin. With one document the output is as for\n" +
			"any scan; with several, --format json writes one compact report per line (NDJSON), sarif one log with a\n" +
			"run per host, junit one file with a testsuite per host, and each table is headed by its host (the\n" +
			"hostname, else the ref) and the document it came from; html holds one report and is refused.\n" +
			"With --summary, one row per check says how many hosts fail, error, are waived, skip and pass it\n" +
			"(a table, or one JSON document with --format json); the exit code covers every host.",
		RunE: func(cmd *cobra.Command, args []string) error {
			if summary {
				if err := validateSummaryFlags(&ff); err != nil {
					return err
				}
			}
			sc, err := ff.scanner(cmd.Context(), memoized)
			if err != nil {
				return err
			}
			return a.toOutput(&ff, func() error {
				if summary {
					return a.scanSummary(cmd.Context(), sc, &ff, args, workers)
				}
				return a.scanSaved(cmd.Context(), sc, &ff, args, workers)
			})
		},
	}
	ff.register(saved)
	saved.Flags().Var(countVar(&workers, runtime.GOMAXPROCS(0)), "workers", "documents evaluated at once")
	saved.Flags().BoolVar(&summary, "summary", false, "print one row per check with how many hosts fail, error, are waived, skip and pass it")

	cmd.AddCommand(a.collectsFacts(rootfs), a.collectsFacts(host), saved, a.collectsFacts(a.scanImageCommand()))
	return cmd
}

// scanCollected is every live-collection scan: compile the pack first (a
// broken policy fails before any collecting), collect, evaluate, report.
func (a *app) scanCollected(ctx context.Context, s *scanFlags, collect func(context.Context) (*facts.Facts, error)) error {
	// Each phase's time at debug level: a selftest boot's scan.err then
	// says where a slow guest's scan went.
	start := time.Now()
	sc, err := s.scanner(ctx, nil)
	if err != nil {
		return err
	}
	a.log.Debug("policies compiled", "took", time.Since(start))
	start = time.Now()
	f, err := collect(ctx)
	if err != nil {
		return err
	}
	a.log.Debug("facts collected", "took", time.Since(start))
	a.logCollectorProblems(f)
	start = time.Now()
	rep, err := sc.Facts(ctx, f)
	if err != nil {
		return err
	}
	a.log.Debug("checks evaluated", "took", time.Since(start))
	return a.emit(s, rep)
}

// scanSaved evaluates saved documents, writing their reports in input
// order. The first report waits until a second one shows whether this is a
// single-document scan (which honours --report) or a stream.
func (a *app) scanSaved(ctx context.Context, sc *scan.Scanner, s *scanFlags, args []string, workers int) error {
	defer fleetGC()()
	o := scan.FleetOptions{Workers: workers}
	out := &manyWriter{app: a, flags: s, w: bufio.NewWriterSize(a.stdout, 1<<20)}
	if s.format == "json" {
		lines := report.NewLineEncoder()
		o.Encode = func(rep *reports.Report) ([]byte, error) {
			var line []byte
			if b, ok := out.spare.Get().(*[]byte); ok {
				line = (*b)[:0]
			}
			return lines.Append(line, rep)
		}
	}
	var first scan.FleetResult
	count := 0
	err := sc.Fleet(ctx, scan.NewSavedReader(args, a.stdin), o, func(r scan.FleetResult) error {
		count++
		switch {
		case count == 1:
			first = r
			return nil
		case count == 2 && len(s.reports) > 0:
			return errors.New("--report writes one report; with several documents use --format json for NDJSON")
		case count == 2:
			if err := out.write(first); err != nil {
				return err
			}
		}
		return out.write(r)
	})
	if err != nil {
		return err
	}
	switch count {
	case 0:
		return noDocuments(args)
	case 1:
		return a.emit(s, first.Report)
	}
	if err := out.flush(); err != nil {
		return err
	}
	if out.code != scan.ExitPass {
		return s.exit(out.code)
	}
	return nil
}

// scanSummary evaluates every document and prints one row per check with how
// many hosts fail it, instead of a report per host. Hosts are added in
// input order, so the failing hosts a row names are the first ones in the
// input, run after run.
func (a *app) scanSummary(ctx context.Context, sc *scan.Scanner, s *scanFlags, args []string, workers int) error {
	defer fleetGC()()
	sum := scan.NewFleetSummary(s.thresholds())
	err := sc.Fleet(ctx, scan.NewSavedReader(args, a.stdin), scan.FleetOptions{Workers: workers}, func(r scan.FleetResult) error {
		sum.Add(r.Report)
		return nil
	})
	if err != nil {
		return err
	}
	if sum.Hosts == 0 {
		return noDocuments(args)
	}
	format := s.format
	if format == "" {
		format = "table"
	}
	r, err := summary.Lookup(format)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(a.stdout)
	if err := r.Render(w, sum); err != nil {
		return fmt.Errorf("writing the summary: %w", err)
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("writing the summary: %w", err)
	}
	return s.exit(sum.ExitCode())
}

// noDocuments is the error for inputs that held no facts document at all:
// empty files, or nothing on stdin.
func noDocuments(args []string) error {
	from := "stdin"
	if len(args) > 0 && !(len(args) == 1 && args[0] == "-") {
		from = strings.Join(args, ", ")
	}
	return fmt.Errorf("no facts document in %s: each file holds one gpuhost.facts/v1 JSON document, or many as NDJSON, as `gpuhost facts` writes them", from)
}

// validateSummaryFlags refuses what a summary cannot honour: it is one
// document over the fleet, in a table or JSON, never per-host report files.
func validateSummaryFlags(s *scanFlags) error {
	if _, err := summary.Lookup(s.format); s.format != "" && err != nil {
		return fmt.Errorf("--summary writes a table or json, not %q", s.format)
	}
	if len(s.reports) > 0 {
		return errors.New("--summary writes to stdout only; --report is for per-host reports")
	}
	return nil
}

// manyWriter renders a stream of reports to stdout: the workers' compact
// JSON line each for json, else each report in turn. It keeps the worst exit code.
type manyWriter struct {
	app   *app
	flags *scanFlags
	w     *bufio.Writer
	r     report.Renderer
	code  int
	// written counts the reports written, to set the tables apart.
	written int
	// spare holds written lines' buffers for the encoder to fill again:
	// lines are as large as a report, and a fleet writes thousands.
	spare sync.Pool
	// merged are the reports of a format that holds them all in one
	// document (report.Merger), kept until the last.
	merged []*reports.Report
}

// flush writes what write kept for one document.
func (m *manyWriter) flush() error {
	if len(m.merged) > 0 {
		if err := m.r.(report.Merger).RenderAll(m.w, m.merged); err != nil {
			return err
		}
	}
	return m.w.Flush()
}

func (m *manyWriter) write(r scan.FleetResult) error {
	m.code = max(m.code, scan.ExitCode([]*reports.Report{r.Report}, m.flags.thresholds()))
	if r.Line != nil {
		_, err := m.w.Write(r.Line)
		m.spare.Put(&r.Line)
		return err
	}
	if m.r == nil {
		m.r = m.app.stdoutRenderer(m.flags)
	}
	if _, ok := m.r.(report.Merger); ok {
		// One document for every host, written when the last is in.
		m.merged = append(m.merged, r.Report)
		return nil
	}
	if m.r.Format() == "html" {
		return errors.New("--format html holds one report; with several documents use --format sarif, junit or json, or --summary")
	}
	// Tables one after another would not say whose each is; the other
	// formats carry the target inside.
	if m.r.Format() == "table" {
		if m.written > 0 {
			m.w.WriteByte('\n')
		}
		fmt.Fprintf(m.w, "== %s ==\n\n", tableHeading(r))
	}
	m.written++
	return m.r.Render(m.w, r.Report)
}

// tableHeading names the host a table is for (its hostname, else its ref)
// and the document it came from. Both came from outside: one line each,
// with nothing a terminal would act on.
func tableHeading(r scan.FleetResult) string {
	host := r.Report.Target.Hostname
	if host == "" {
		host = r.Report.Target.Ref
	}
	line := func(s string) string { return strings.Join(strings.Fields(escape.Terminal(s)), " ") }
	if host = line(host); host == "" {
		host = "(no hostname or ref)"
	}
	return fmt.Sprintf("%s %s, from %s", line(r.Report.Target.Kind), host, line(r.Doc.Name))
}

// fleetHeapLimit is the heap size at which a fleet scan collects garbage.
const fleetHeapLimit = 256 << 20

// fleetGC sets this process's garbage collection for a scan of many saved
// documents and returns what restores it. Each document allocates a few
// hundred KB that die at once, while what lives (the documents in the
// window, the memo) stays small: a collection only when the heap nears a
// fixed bound does a fraction of the work of pacing by the live heap, and
// the bound keeps memory flat over any number of documents. An operator's
// GOGC or GOMEMLIMIT wins. The process is the program's to tune, so this
// lives here and not in package scan.
func fleetGC() (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	percent := debug.SetGCPercent(-1)
	limit := debug.SetMemoryLimit(fleetHeapLimit)
	return func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}
}
