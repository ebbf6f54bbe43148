package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/agent"
	"github.com/gpuhost/gpuhost/agent/nodemark"
	"github.com/gpuhost/gpuhost/agent/podresources"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/gpu"
	"github.com/gpuhost/gpuhost/manifest"
	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan"
	"github.com/gpuhost/gpuhost/target"
	"github.com/gpuhost/gpuhost/target/domains"
)

// defaultDB is where the agent keeps its history on a host.
const defaultDB = "/var/lib/gpuhost/history.db"

// agentCommand runs scans of the host (plus drift against a baseline) on a
// schedule, keeps their history, and serves metrics.
// agentOptions are the agent command's flags, gathered so that the command,
// its run and its flag registration can each stay short.
type agentOptions struct {
	sf                                  scanFlags
	hf                                  hostFlags
	cfg                                 agent.Config
	baseline, rootfs, retain, podSocket string
	once, writableRoot                  bool
	nf                                  nodeFlags
	validateSteps                       []string
}

func (a *app) agentCommand() *cobra.Command {
	o := &agentOptions{}
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Scan the host on a schedule, keep the history, and serve Prometheus metrics",
		Long: "The agent runs the scan pipeline on the running host every --interval (or on a --cron schedule), with\n" +
			"up to 10% random jitter, one run at a time: a tick that finds a run still going is skipped and counted.\n" +
			"With --baseline it also evaluates drift against a baked manifest. Every completed run is kept in an\n" +
			"SQLite history (--db), pruned by --retain and --retain-runs. It serves /metrics, /healthz and\n" +
			"/api/v1/runs/latest on --listen, TLS 1.3 only with --tls-cert/--tls-key, behind a bearer token with\n" +
			"--token-file (all but /healthz). With --once it runs a single scan, records it, and exits with its code,\n" +
			"as a systemd timer wants. In a Kubernetes pod, --node-label and --node-taint mark the node while it fails\n" +
			"a critical or high check (label " + nodemark.Label + "=false, annotation " + nodemark.Annotation + ",\n" +
			"taint " + nodemark.Taint + ":NoSchedule) and remove the marks once it passes; an untrusted run changes nothing.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runAgent(cmd.Context(), o) },
	}
	o.register(cmd)
	return a.collectsFacts(cmd)
}

// runAgent builds the agent from its flags and runs it, once or on its
// schedule.
func (a *app) runAgent(ctx context.Context, o *agentOptions) error {
	cfg := &o.cfg
	keep, err := parseRetain(o.retain)
	if err != nil {
		return err
	}
	cfg.Retain.MaxAge = keep
	if !o.writableRoot {
		if err := checkHostRoot(o.hf.root); err != nil {
			return err
		}
	}
	sc, err := a.agentScanner(ctx, &o.sf, o.validateSteps)
	if err != nil {
		return err
	}
	cfg.FailOn, cfg.FailOnSkip = o.sf.failOn, o.sf.failOnSkip
	cfg.Log = a.log
	cfg.Scan = a.agentScan(sc, o.baseline, o.rootfs, &o.hf)
	if o.once {
		cfg.Listen = ""
	}
	if cfg.GPUInterval > 0 && !o.once {
		if o.podSocket == "" {
			o.podSocket = filepath.Join(o.hf.root, podresources.DefaultSocket)
		}
		cfg.GPU = agent.NewGPUSampler(a.nvml(), o.hf.root, a.log, agent.WithPodResources(podresources.New(o.podSocket)))
	}
	if cfg.Node, err = o.nf.marker(); err != nil {
		return err
	}
	ag, err := agent.New(*cfg)
	if err != nil {
		return err
	}
	if o.once {
		return a.agentOnce(ctx, ag, cfg.DBPath)
	}
	return ag.Run(ctx)
}

func (o *agentOptions) register(cmd *cobra.Command) {
	cfg := &o.cfg
	o.sf.policyFlags.register(cmd)
	f := cmd.Flags()
	o.sf.waivers.register(cmd)
	f.Var(choiceVar(&o.sf.failOn, "high", reports.Severities...), "fail-on", "a run's exit code is 1 when a check fails at or above: "+strings.Join(reports.Severities, ", "))
	f.Var(optionalChoiceVar(&o.sf.failOnSkip, reports.Severities...), "fail-on-skip", "a run's exit code is also 1 when a check at or above this severity was skipped or errored")
	o.hf.register(cmd)
	f.StringVar(&o.baseline, "baseline", "", "also evaluate drift against this baked manifest (an image carries it at "+manifest.Path+")")
	f.StringVar(&o.rootfs, "rootfs", "", "scan an unpacked root filesystem instead of the running host")
	f.BoolVar(&o.writableRoot, "allow-writable-host-root", false, "run although --host-root can be written (a copy of a root for a lab or a test); a DaemonSet must not set it: the agent refuses a writable host by default")
	f.DurationVar(&cfg.Interval, "interval", time.Hour, "time between runs")
	f.DurationVar(&cfg.GPUInterval, "gpu-interval", 15*time.Second, "time between GPU samples for the DCGM_FI_* metrics (utilization, memory, power, temperature, ECC, Xid, processes); 0 turns sampling off")
	f.StringVar(&o.podSocket, "pod-resources-socket", "", "the kubelet's pod-resources socket, read each GPU sample to label GPU series with the namespace, pod and container holding the GPU (default: "+podresources.DefaultSocket+" under --host-root; absent off Kubernetes)")
	f.StringVar(&cfg.Cron, "cron", "", "a standard cron expression (or @hourly, @daily...) in place of --interval")
	f.BoolVar(&cfg.RunAtStart, "run-at-start", true, "run once at start rather than waiting for the first tick")
	f.BoolVar(&o.once, "once", false, "run one scan, record it, and exit with its exit code (no listener)")
	f.Var(choiceListVar(&o.validateSteps, append([]string{"all", gpu.StepDriver}, gpu.SkippableSteps()...)...), "gpu-validate",
		"also run gpuhost validate's steps each run, for GH-GPU-022: all, or a list such as driver,fabric,mig (the driver step always runs; "+
			"a step left out is not required); each step may take "+gpu.DefaultStepTimeout.String()+", within --deadline")
	f.StringVar(&cfg.DBPath, "db", defaultDB, "SQLite run history")
	f.StringVar(&o.retain, "retain", "30d", "drop runs older than this (Go duration, or Nd for days; 0 keeps all)")
	f.IntVar(&cfg.Retain.MaxRuns, "retain-runs", 1000, "keep at most this many runs (0 keeps all)")
	f.StringVar(&cfg.Listen, "listen", "127.0.0.1:9108", "HTTP address for /metrics, /healthz and /api/v1/runs/latest (empty: none)")
	f.StringVar(&cfg.TLSCert, "tls-cert", "", "serve TLS 1.3 only with this certificate (PEM)")
	f.StringVar(&cfg.TLSKey, "tls-key", "", "the key of --tls-cert (PEM)")
	f.StringVar(&cfg.TokenFile, "token-file", "", "require this bearer token on every endpoint but /healthz")
	o.nf.register(cmd)
	cmd.MarkFlagsRequiredTogether("tls-cert", "tls-key")
	cmd.MarkFlagsMutuallyExclusive("interval", "cron")
}

// nodeFlags choose the marks the agent sets on its Kubernetes node.
type nodeFlags struct {
	label, taint bool
	name         string
}

func (nf *nodeFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.BoolVar(&nf.label, "node-label", false, "in a Kubernetes pod, label the node "+nodemark.Label+"=false and annotate it with the failing checks ("+nodemark.Annotation+") while a critical or high check fails")
	f.BoolVar(&nf.taint, "node-taint", false, "in a Kubernetes pod, taint the node "+nodemark.Taint+":NoSchedule while a critical or high check fails")
	f.StringVar(&nf.name, "node-name", "", "the node --node-label and --node-taint mark (default: $NODE_NAME, which the DaemonSet sets from spec.nodeName)")
}

// marker is the node marker the flags ask for, nil when they ask for none.
func (nf *nodeFlags) marker() (agent.NodeMarker, error) {
	if !nf.label && !nf.taint {
		return nil, nil
	}
	var opts []nodemark.Option
	if nf.label {
		opts = append(opts, nodemark.WithLabel())
	}
	if nf.taint {
		opts = append(opts, nodemark.WithTaint())
	}
	// Read here, not as the flag's default, so the help and man page do
	// not show the environment of whoever printed them.
	node := nf.name
	if node == "" {
		node = os.Getenv("NODE_NAME")
	}
	m, err := nodemark.New(node, opts...)
	if err != nil {
		return nil, fmt.Errorf("--node-label/--node-taint: %w", err)
	}
	return m, nil
}

// agentScanner builds the pipeline every run goes through, and with
// --gpu-validate adds the gpu_validation collector to every run.
func (a *app) agentScanner(ctx context.Context, sf *scanFlags, validateSteps []string) (*scan.Scanner, error) {
	e, err := sf.engine(ctx)
	if err != nil {
		return nil, err
	}
	if len(validateSteps) > 0 {
		if err := a.agentValidation(validateSteps, e.Params()); err != nil {
			return nil, err
		}
	}
	// Runs repeat on one host: the memo answers what did not change.
	return sf.scannerOf(e, memoized)
}

// agentValidation adds the gpu_validation collector to every run: the
// steps named (or all), with the MIG mode the pack's params want.
func (a *app) agentValidation(steps []string, params map[string]any) error {
	mig, err := gpu.MIGWant(params)
	if err != nil {
		return err
	}
	var skip []string
	if !slices.Contains(steps, "all") {
		for _, s := range gpu.SkippableSteps() {
			if !slices.Contains(steps, s) {
				skip = append(skip, s)
			}
		}
	}
	a.extraCollectors = append(a.extraCollectors, domains.GPUValidation(a.nvml(), gpu.WithMIG(mig), gpu.WithSkip(skip...)))
	return nil
}

// agentScan is one run's work: the facts of the host (or a rootfs), the
// baseline put in place of whatever manifest the target carries, and the
// pipeline. The baseline is read afresh each run, so a re-baked manifest
// needs no restart.
func (a *app) agentScan(sc *scan.Scanner, baseline, rootfs string, hf *hostFlags) agent.ScanFunc {
	return func(ctx context.Context) (*reports.Report, error) {
		var f *facts.Facts
		var err error
		switch {
		case baseline != "" && rootfs != "":
			f, err = a.driftFacts(ctx, rootfs, false, hf)
		case baseline != "":
			f, err = a.driftFacts(ctx, hf.root, true, hf)
		case rootfs != "":
			f, err = target.Rootfs(ctx, rootfs, a.collectOptions(nil))
		default:
			f, err = target.Host(ctx, hf.root, a.collectOptions(hf))
		}
		if err != nil {
			return nil, err
		}
		if baseline != "" {
			base, err := readBaseline(baseline)
			if err != nil {
				return nil, err
			}
			f.Manifest = base
			f.Record("manifest", facts.StatusOK, "")
		}
		a.logCollectorProblems(f)
		return sc.Facts(ctx, f)
	}
}

// agentOnce runs one scan and records it; the exit code is the run's, and
// a history that could not be written makes it 2.
func (a *app) agentOnce(ctx context.Context, ag *agent.Agent, db string) error {
	st, err := agent.OpenStore(ctx, db)
	if err != nil {
		return err
	}
	st.Close()
	defer ag.Close()
	r := ag.RunOnce(ctx)
	if r.Error != "" {
		return errors.New(r.Error)
	}
	if r.ID == 0 {
		return fmt.Errorf("run not recorded in %s", db)
	}
	fmt.Fprintf(a.stdout, "run %d: exit %d, %d failed, %d errors, %d waived (%s)\n", r.ID, r.ExitCode,
		r.Summary.ByStatus[reports.StatusFail], r.Summary.ByStatus[reports.StatusError],
		r.Summary.ByStatus[reports.StatusWaived], r.Duration.Round(time.Millisecond))
	if r.ExitCode != scan.ExitPass {
		return &exitError{code: r.ExitCode}
	}
	return nil
}

// parseRetain reads a retention age: a Go duration, or N followed by d for
// days, since retention is thought of in days.
func parseRetain(s string) (time.Duration, error) { return parseAge("--retain", s) }

// parseAge reads an age given to flag: a Go duration, or N followed by d
// for days.
func parseAge(flag, s string) (time.Duration, error) {
	if s == "" || s == "0" {
		return 0, nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		days, err := strconv.Atoi(n)
		if err != nil || days < 0 || days > 100*365 {
			return 0, fmt.Errorf("%s %q: want a duration such as 720h or 30d", flag, s)
		}
		return time.Duration(days) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s %q: want a duration such as 720h or 30d", flag, s)
	}
	return d, nil
}
