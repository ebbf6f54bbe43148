package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/gpuhost/gpuhost/checks"
	"github.com/gpuhost/gpuhost/checks/facts"
	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan"
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
	f.StringVar(&p.verificationAlg, "verification-alg", "RS256", "signing algorithm of --verification-key")
}

// pack is the policy pack the flags name.
func (p *policyFlags) pack() scan.Pack {
	return scan.Pack{Policies: p.policies, Extend: p.extend, Params: p.params,
		VerificationKey: p.verificationKey, VerificationAlg: p.verificationAlg}
}

func (p *policyFlags) engine(ctx context.Context, extra ...engine.Option) (*engine.Engine, error) {
	// Name the flag, not just the file, when a file it names is missing.
	for flag, file := range map[string]string{"--params": p.params, "--verification-key": p.verificationKey} {
		if _, err := os.Stat(file); file != "" && err != nil {
			return nil, untrusted(fmt.Errorf("reading %s: %w", flag, err))
		}
	}
	e, err := p.pack().Engine(ctx, extra...)
	if err != nil {
		return nil, untrusted(err)
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
	format     string
	reports    []string
	noColor    bool
}

func (s *scanFlags) register(cmd *cobra.Command) {
	s.policyFlags.register(cmd)
	f := cmd.Flags()
	s.waivers.register(cmd)
	f.StringVar(&s.failOn, "fail-on", "high", "exit 1 when a check fails at or above: "+strings.Join(reports.Severities, ", "))
	f.StringVar(&s.failOnSkip, "fail-on-skip", "", "also exit 1 when a check at or above this severity was skipped or errored (default: never)")
	f.StringVar(&s.format, "format", "", "format on stdout: "+strings.Join(reports.Formats(), ", ")+" (default: table, colored on a terminal)")
	f.StringArrayVar(&s.reports, "report", nil, "also write FORMAT=PATH (repeatable), atomically")
	f.BoolVar(&s.noColor, "no-color", false, "never color the table")
}

func (s *scanFlags) validate() error {
	if !reports.ValidSeverity(s.failOn) {
		return untrusted(fmt.Errorf("--fail-on %q: want one of %s", s.failOn, strings.Join(reports.Severities, ", ")))
	}
	if s.failOnSkip != "" && !reports.ValidSeverity(s.failOnSkip) {
		return untrusted(fmt.Errorf("--fail-on-skip %q: want one of %s", s.failOnSkip, strings.Join(reports.Severities, ", ")))
	}
	if s.format != "" {
		if _, err := reports.Lookup(s.format); err != nil {
			return untrusted(fmt.Errorf("--format: %w", err))
		}
	}
	for _, spec := range s.reports {
		if _, _, err := reports.ParseReportSpec(spec); err != nil {
			return untrusted(fmt.Errorf("--report: %w", err))
		}
	}
	return nil
}

// scanner builds the pipeline. A single scan takes the plain engine path;
// fleet evaluation (scan facts, the agent's repeated runs) passes the memo.
func (s *scanFlags) scanner(ctx context.Context, extra ...engine.Option) (*scan.Scanner, error) {
	if err := s.validate(); err != nil {
		return nil, err
	}
	e, err := s.engine(ctx, extra...)
	if err != nil {
		return nil, err
	}
	var opts []scan.Option
	list, err := s.waivers.load(&s.policyFlags)
	if err != nil {
		return nil, untrusted(err)
	}
	if list != nil {
		opts = append(opts, scan.WithWaivers(list))
	}
	return scan.New(e, opts...), nil
}

// stdoutRenderer picks the stdout format: the flag, else a table, colored
// when stdout is a terminal.
func (a *app) stdoutRenderer(s *scanFlags) reports.Renderer {
	if s.format != "" {
		r, _ := reports.Lookup(s.format)
		return r
	}
	f, ok := a.stdout.(*os.File)
	color := ok && !s.noColor && os.Getenv("NO_COLOR") == "" && term.IsTerminal(int(f.Fd()))
	return reports.NewTable(color)
}

// emit writes one report to stdout and to every --report file, and returns
// the exit code for it.
func (a *app) emit(s *scanFlags, rep *reports.Report) error {
	if err := a.stdoutRenderer(s).Render(a.stdout, rep); err != nil {
		return untrusted(fmt.Errorf("writing report: %w", err))
	}
	for _, spec := range s.reports {
		format, path, _ := reports.ParseReportSpec(spec)
		r, _ := reports.Lookup(format)
		if err := reports.WriteFile(path, r, rep); err != nil {
			return untrusted(err)
		}
		a.log.Info("report written", "format", format, "path", path)
	}
	return exitFor([]*reports.Report{rep}, s.thresholds())
}

func (s *scanFlags) thresholds() scan.Thresholds {
	return scan.Thresholds{FailOn: s.failOn, FailOnSkip: s.failOnSkip}
}

func exitFor(reps []*reports.Report, t scan.Thresholds) error {
	if code := scan.ExitCode(reps, t); code != scan.ExitPass {
		return &exitError{code: code}
	}
	return nil
}

type hostFlags struct {
	root             string
	probeTimeout     time.Duration
	probeConcurrency int
}

func (h *hostFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&h.root, "host-root", "/", "where the host's root filesystem is mounted (a DaemonSet mounts it at /host)")
	cmd.Flags().DurationVar(&h.probeTimeout, "probe-timeout", 2*time.Second, "timeout of one TLS handshake probe")
	cmd.Flags().IntVar(&h.probeConcurrency, "probe-concurrency", 16, "TLS probes run at once")
}

func (a *app) collectOptions(h *hostFlags) checks.Options {
	o := checks.Options{Log: a.log}
	if h != nil {
		o.ProbeTimeout, o.ProbeConcurrency = h.probeTimeout, h.probeConcurrency
	}
	if a.trivyDB != "" {
		o.Collectors = append(checks.All(), vulnerabilityCollector(a.trivyDB))
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
				return checks.Rootfs(ctx, args[0], a.collectOptions(nil))
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
				return checks.Host(ctx, hostOpts.root, a.collectOptions(&hostOpts))
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
			"any scan; with several, --format json writes one compact report per line (NDJSON).\n" +
			"With --summary, one row per check says how many hosts fail, error, are waived, skip and pass it\n" +
			"(a table, or one JSON document with --format json); the exit code covers every host.",
		RunE: func(cmd *cobra.Command, args []string) error {
			if summary {
				if err := validateSummaryFlags(&ff); err != nil {
					return err
				}
			}
			sc, err := ff.scanner(cmd.Context(), engine.WithMemo(engine.DefaultMemoEntries))
			if err != nil {
				return err
			}
			if summary {
				return a.scanSummary(cmd.Context(), sc, &ff, args, workers)
			}
			return a.scanSaved(cmd.Context(), sc, &ff, args, workers)
		},
	}
	ff.register(saved)
	saved.Flags().IntVar(&workers, "workers", runtime.GOMAXPROCS(0), "documents evaluated at once")
	saved.Flags().BoolVar(&summary, "summary", false, "print one row per check with how many hosts fail, error, are waived, skip and pass it")

	cmd.AddCommand(a.collectsFacts(rootfs), a.collectsFacts(host), saved, a.collectsFacts(a.scanImageCommand()))
	return cmd
}

// scanCollected is every live-collection scan: compile the pack first (a
// broken policy fails before any collecting), collect, evaluate, report.
func (a *app) scanCollected(ctx context.Context, s *scanFlags, collect func(context.Context) (*facts.Facts, error)) error {
	sc, err := s.scanner(ctx)
	if err != nil {
		return err
	}
	f, err := collect(ctx)
	if err != nil {
		return untrusted(err)
	}
	a.logCollectorProblems(f)
	rep, err := sc.Facts(ctx, f)
	if err != nil {
		return untrusted(err)
	}
	return a.emit(s, rep)
}

// savedDoc is one document read from a file or stream.
type savedDoc struct {
	name string
	data []byte
}

// maxFactsDoc bounds one saved document (a line of NDJSON, or a file).
const maxFactsDoc = 64 << 20

// readSaved streams documents from files (or stdin) to out until ctx ends. A
// file holds one pretty-printed document, or NDJSON.
func (a *app) readSaved(ctx context.Context, args []string, out chan<- savedDoc) error {
	defer close(out)
	if len(args) == 0 {
		args = []string{"-"}
	}
	for _, name := range args {
		var r io.Reader
		if name == "-" {
			r, name = a.stdin, "stdin"
		} else {
			f, err := os.Open(name)
			if err != nil {
				return fmt.Errorf("reading facts: %w", err)
			}
			defer f.Close()
			r = f
		}
		// The splitter only cuts the stream into documents; DecodeJSON
		// checks each in full (and refuses a repeated name, which two
		// readers could take two ways).
		split := newValueSplitter(r, maxFactsDoc)
		for i := 1; ; i++ {
			v, err := split.next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return fmt.Errorf("reading facts %s (document %d): %w", name, i, err)
			}
			// The splitter reuses its buffer for the next value.
			raw := bytes.Clone(v)
			label := name
			more, err := split.more()
			if err != nil {
				return fmt.Errorf("reading facts %s (document %d): %w", name, i+1, err)
			}
			if i > 1 || more {
				label = fmt.Sprintf("%s#%d", name, i)
			}
			select {
			case out <- savedDoc{name: label, data: raw}:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

func (a *app) scanSaved(ctx context.Context, sc *scan.Scanner, s *scanFlags, args []string, workers int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// NDJSON lines are encoded by the workers, so the one writer only copies
	// bytes; encoding was a fifth of the CPU and ran on this goroutine alone.
	var encode func(*reports.Report) ([]byte, error)
	if s.format == "json" {
		lines := reports.NewLineEncoder()
		encode = func(rep *reports.Report) ([]byte, error) { return lines.Append(nil, rep) }
	}
	results, readErr := a.evaluateStream(ctx, sc, args, workers, encode)

	// Reports stream out in input order, whatever order workers finish in;
	// only the out-of-order ones are held, so memory stays flat over a fleet.
	// The first report waits until a second one shows whether this is a
	// single-document scan (which honours --report) or a stream.
	out := &manyWriter{app: a, flags: s, w: bufio.NewWriterSize(a.stdout, 1<<20)}
	pending := map[int]savedResult{}
	var first savedResult
	var firstErr error
	count, next := 0, 0
	for r := range results {
		if r.err != nil || firstErr != nil {
			if firstErr == nil {
				firstErr = r.err
				cancel()
			}
			continue
		}
		pending[r.seq] = r
		for rep, ok := pending[next]; ok; rep, ok = pending[next] {
			delete(pending, next)
			next++
			count++
			switch {
			case count == 1:
				first = rep
				continue
			case count == 2 && len(s.reports) > 0:
				firstErr = errors.New("--report writes one report; with several documents use --format json for NDJSON")
				cancel()
			case count == 2:
				firstErr = out.write(first)
			}
			if firstErr == nil {
				firstErr = out.write(rep)
			}
			if firstErr != nil {
				cancel()
				break
			}
		}
	}
	if err := readErr(); err != nil && firstErr == nil {
		firstErr = err
	}
	if firstErr != nil {
		return untrusted(firstErr)
	}
	switch count {
	case 0:
		return untrusted(errors.New("no facts documents read"))
	case 1:
		return a.emit(s, first.rep)
	}
	if err := out.w.Flush(); err != nil {
		return untrusted(err)
	}
	if out.code != scan.ExitPass {
		return &exitError{code: out.code}
	}
	return nil
}

// savedResult is one document's report, or why it has none; seq is the
// document's place in the input, and line the report already encoded when
// the stream is NDJSON.
type savedResult struct {
	seq  int
	rep  *reports.Report
	line []byte
	err  error
}

// evaluateStream reads saved documents and evaluates them on workers
// goroutines, which also encode each report when encode is set. Results
// arrive in completion order; the channel closes when the input is done or
// ctx is cancelled. readErr tells, once the channel has closed, why reading
// stopped early.
func (a *app) evaluateStream(ctx context.Context, sc *scan.Scanner, args []string, workers int, encode func(*reports.Report) ([]byte, error)) (<-chan savedResult, func() error) {
	// Each document allocates a few hundred KB that die at once; collecting
	// less often measured 17% faster over 10,000 documents, and memory stays
	// bounded because reports stream out. An operator's GOGC still wins.
	if os.Getenv("GOGC") == "" {
		old := debug.SetGCPercent(400)
		go func() { <-ctx.Done(); debug.SetGCPercent(old) }()
	}
	docs := make(chan savedDoc, 64)
	var readErr error
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		readErr = a.readSaved(ctx, args, docs)
	}()
	workers = max(workers, 1)
	type job struct {
		seq int
		doc savedDoc
	}
	jobs := make(chan job, workers)
	results := make(chan savedResult, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				r := savedResult{seq: j.seq}
				r.rep, r.err = evaluateSaved(ctx, sc, j.doc)
				if r.err == nil && encode != nil {
					if r.line, r.err = encode(r.rep); r.err != nil {
						r.err = fmt.Errorf("encoding the report of %s: %w", j.doc.name, r.err)
					}
				}
				results <- r
			}
		}()
	}
	go func() {
		seq := 0
		for d := range docs {
			jobs <- job{seq, d}
			seq++
		}
		close(jobs)
		wg.Wait()
		close(results)
	}()
	return results, func() error { <-readDone; return readErr }
}

// scanSummary evaluates every document and prints one row per check with how
// many hosts fail it, instead of a report per host.
func (a *app) scanSummary(ctx context.Context, sc *scan.Scanner, s *scanFlags, args []string, workers int) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results, readErr := a.evaluateStream(ctx, sc, args, workers, nil)
	sum := scan.NewFleetSummary(s.thresholds())
	var firstErr error
	// Hosts are added in input order, so the failing hosts a row names are
	// the first ones in the input, run after run.
	pending := map[int]*reports.Report{}
	next := 0
	for r := range results {
		switch {
		case firstErr != nil:
		case r.err != nil:
			firstErr = r.err
			cancel()
		default:
			pending[r.seq] = r.rep
			for rep, ok := pending[next]; ok; rep, ok = pending[next] {
				delete(pending, next)
				next++
				sum.Add(rep)
			}
		}
	}
	if err := readErr(); err != nil && firstErr == nil {
		firstErr = err
	}
	if firstErr != nil {
		return untrusted(firstErr)
	}
	if sum.Hosts == 0 {
		return untrusted(errors.New("no facts documents read"))
	}
	w := bufio.NewWriter(a.stdout)
	write := sum.WriteTable
	if s.format == "json" {
		write = sum.WriteJSON
	}
	if err := write(w); err != nil {
		return untrusted(fmt.Errorf("writing the summary: %w", err))
	}
	if err := w.Flush(); err != nil {
		return untrusted(fmt.Errorf("writing the summary: %w", err))
	}
	if code := sum.ExitCode(); code != scan.ExitPass {
		return &exitError{code: code}
	}
	return nil
}

// validateSummaryFlags refuses what a summary cannot honour: it is one
// document over the fleet, in a table or JSON, never per-host report files.
func validateSummaryFlags(s *scanFlags) error {
	if s.format != "" && s.format != "table" && s.format != "json" {
		return untrusted(fmt.Errorf("--summary writes a table or json, not %q", s.format))
	}
	if len(s.reports) > 0 {
		return untrusted(errors.New("--summary writes to stdout only; --report is for per-host reports"))
	}
	return nil
}

// manyWriter renders a stream of reports to stdout: the workers' compact
// JSON line each for json, else each report in turn. It keeps the worst exit code.
type manyWriter struct {
	app   *app
	flags *scanFlags
	w     *bufio.Writer
	r     reports.Renderer
	code  int
}

func (m *manyWriter) write(r savedResult) error {
	m.code = max(m.code, scan.ExitCode([]*reports.Report{r.rep}, m.flags.thresholds()))
	if r.line != nil {
		_, err := m.w.Write(r.line)
		return err
	}
	if m.r == nil {
		m.r = m.app.stdoutRenderer(m.flags)
	}
	return m.r.Render(m.w, r.rep)
}

// evaluateSaved validates a saved document against the facts schema, then
// evaluates it. Saved facts come from anywhere; the schema is the gate.
func evaluateSaved(ctx context.Context, sc *scan.Scanner, d savedDoc) (*reports.Report, error) {
	decoded, err := facts.DecodeJSON(d.data)
	if err != nil {
		return nil, fmt.Errorf("facts %s: %w", d.name, err)
	}
	doc, err := engine.DocumentFromValue(decoded, d.name)
	if err != nil {
		return nil, err
	}
	// Every collector records its outcome; a document with none was not
	// collected by gpuhost, or was cut down, and proves nothing.
	if len(doc.Collectors) == 0 {
		return nil, fmt.Errorf("facts %s: collectors is empty: the document records no collector's outcome, so no check could be judged on it", d.name)
	}
	return sc.Document(ctx, doc, d.data)
}
