package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/pprof"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/internal/version"
	"github.com/gpuhost/gpuhost/scan"
	"github.com/gpuhost/gpuhost/target/collector"
)

// exitError carries an exit code other than the default up to main;
// nothing below main exits. An error of any other type is exit 2, the scan
// could not be trusted, so commands return their errors as they are.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}
func (e *exitError) Unwrap() error { return e.err }

// app holds what every command shares: streams and the logger.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	log            *slog.Logger
	logLevel       string
	// config is --config, the settings file (settings).
	config     string
	cpuProfile string
	profile    *os.File
	// trivyDB is an offline trivy vulnerability DB; when set, the command
	// (one that collects facts) also matches the target's OS packages
	// against it.
	trivyDB string
	// budget is what one collection may spend, all collectors together.
	budget    collect.Budget
	kdfMemMiB int
	maxMemMiB int
	// extraCollectors join every collector in a collection: the agent's
	// --gpu-validate adds the gpu_validation collector.
	extraCollectors []collector.Collector
	// newNVML opens NVML for validate, --gpu-validate and the agent's GPU
	// samples; nil is defaultNVML, and tests give a go-nvml mock.
	newNVML func() nvml.Interface
	// unitState answers validate's question whether a systemd unit runs;
	// nil asks the host's systemd.
	unitState func(ctx context.Context, unit string) (state, reason string)
}

// nvml is the NVML library the GPU validation asks.
func (a *app) nvml() nvml.Interface {
	if a.newNVML != nil {
		return a.newNVML()
	}
	return defaultNVML()
}

// defaultNVML is the NVML library: the real one, unless the binary was built
// with the nvmlmock tag (nvmlmock.go).
var defaultNVML = func() nvml.Interface { return nvml.New() }

// startProfile starts CPU profiling when --cpuprofile is set; make bench and
// performance work use it.
func (a *app) startProfile() error {
	if a.cpuProfile == "" {
		return nil
	}
	f, err := os.Create(a.cpuProfile)
	if err != nil {
		return fmt.Errorf("--cpuprofile: %w", err)
	}
	a.profile = f
	return pprof.StartCPUProfile(f)
}

func (a *app) stopProfile() {
	if a.profile != nil {
		pprof.StopCPUProfile()
		a.profile.Close()
		a.profile = nil
	}
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return (&app{stdin: stdin, stdout: stdout, stderr: stderr}).execute(ctx, args)
}

// execute runs the command line args and returns the exit code.
func (a *app) execute(ctx context.Context, args []string) int {
	stdin, stdout, stderr := a.stdin, a.stdout, a.stderr
	root := a.rootCommand()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	a.stopProfile() // PersistentPostRun does not run when the command fails
	if err == nil {
		return 0
	}
	var ue *usageError
	if errors.As(err, &ue) {
		fmt.Fprintln(stderr, ue.line())
		return scan.ExitUntrusted
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintln(stderr, "gpuhost:", ee.err)
		}
		return ee.code
	}
	// Usage errors and anything unclassified: the verdict cannot be trusted.
	fmt.Fprintln(stderr, "gpuhost:", err)
	return scan.ExitUntrusted
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:           "gpuhost",
		Short:         "Scan GPU host images and hosts against policy",
		Long:          "gpuhost collects facts from a GPU host image or a running host, evaluates them against an OPA policy pack, and writes reports.",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			config, err := settings(cmd, a.config, os.Getenv)
			if err != nil {
				return &usageError{cmd: cmd, err: err}
			}
			var level slog.Level
			if err := level.UnmarshalText([]byte(a.logLevel)); err != nil {
				return fmt.Errorf("--log-level %q: want debug, info, warn or error", a.logLevel)
			}
			a.log = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
			slog.SetDefault(a.log)
			if config != "" {
				a.log.Info("settings read", "config", config)
			}
			return a.startProfile()
		},
		PersistentPostRun: func(*cobra.Command, []string) { a.stopProfile() },
	}
	root.PersistentFlags().StringVar(&a.logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	root.PersistentFlags().StringVar(&a.config, "config", "", "settings file: flag names as keys (default: "+configFile+" in the working directory, when there is one); a flag beats its "+envPrefix+"NAME environment variable, which beats the file")
	root.PersistentFlags().StringVar(&a.cpuProfile, "cpuprofile", "", "write a CPU profile of the command to this file")
	_ = root.PersistentFlags().MarkHidden("cpuprofile")
	root.AddCommand(a.factsCommand(), a.scanCommand(), a.policyCommand(), a.complianceCommand(), a.driftCommand(), a.reportCommand(), a.waiversCommand(), a.agentCommand(), a.historyCommand(), a.validateCommand(), a.versionCommand())
	root.AddCommand(a.buildCommands()...)
	root.Version = versionLine()
	root.SetVersionTemplate("gpuhost {{.Version}}\n")
	addExamples(root)
	addCompletions(root)
	usageOnMisuse(root)
	return root
}

// versionLine is what --version and the version command print after the
// program's name.
func versionLine() string {
	if !fullBuild {
		return version.String() + " (lean build: no plan, manifest, sbom or --trivy-db)"
	}
	return version.String()
}

// collectsFacts gives a command that collects facts its --trivy-db flag:
// only such commands match packages against a DB, and a flag on a command
// that ignores it (history, plan) would promise what it does not do.
func (a *app) collectsFacts(cmd *cobra.Command) *cobra.Command {
	d := collect.DefaultBudget
	cmd.Flags().Var(timeoutVar(&a.budget.Deadline, d.Deadline), "deadline",
		"the most the collection may take, every collector together; one it cuts short is an error, never a pass")
	cmd.Flags().Var(timeoutVar(&a.budget.KDFTime, d.KDFTime), "kdf-time",
		"the most trying the empty passphrase on the target's LUKS key slots may take, all slots together")
	cmd.Flags().Var(countVar(&a.kdfMemMiB, int(d.KDFMemory>>20)), "kdf-memory",
		"the most memory (MiB) one LUKS key slot's KDF may ask for; a slot that asks for more is not tried, and says so")
	cmd.Flags().Var(countVar(&a.maxMemMiB, int(d.Memory>>20)), "max-memory",
		"the most heap (MiB) the collection may hold, every collector together; the collector that crosses it, and every one after, is an error, never a pass")
	if vulnerabilityMatching {
		cmd.Flags().StringVar(&a.trivyDB, "trivy-db", "", "offline trivy DB directory (trivy.db, metadata.json): also match the target's OS packages against it; never downloaded")
	}
	return cmd
}

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the gpuhost version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := fmt.Fprintln(a.stdout, "gpuhost", versionLine())
			return err
		},
	}
}

func oneOf(v string, allowed []string) bool {
	for _, a := range allowed {
		if strings.EqualFold(v, a) {
			return true
		}
	}
	return false
}
