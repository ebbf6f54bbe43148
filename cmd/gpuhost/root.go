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

	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/internal/version"
	"github.com/gpuhost/gpuhost/scan"
)

// exitError carries an exit code up to main; nothing below main exits.
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

// untrusted wraps an error that makes a scan's verdict meaningless: exit 2.
func untrusted(err error) error { return &exitError{code: scan.ExitUntrusted, err: err} }

// app holds what every command shares: streams and the logger.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	log            *slog.Logger
	logLevel       string
	cpuProfile     string
	profile        *os.File
	// trivyDB is an offline trivy vulnerability DB; when set, every command
	// that collects facts also matches the target's OS packages against it.
	trivyDB string
}

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
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr}
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
		Long:          "gpuhost collects facts from a GPU host image or a running host, evaluates them against an OPA policy pack, and writes reports.\n\nExit codes: 0 nothing fails at or above --fail-on; 1 something does; 2 the scan could not be trusted.",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			var level slog.Level
			if err := level.UnmarshalText([]byte(a.logLevel)); err != nil {
				return fmt.Errorf("--log-level %q: want debug, info, warn or error", a.logLevel)
			}
			a.log = slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
			slog.SetDefault(a.log)
			return a.startProfile()
		},
		PersistentPostRun: func(*cobra.Command, []string) { a.stopProfile() },
	}
	root.PersistentFlags().StringVar(&a.logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	root.PersistentFlags().StringVar(&a.cpuProfile, "cpuprofile", "", "write a CPU profile of the command to this file")
	_ = root.PersistentFlags().MarkHidden("cpuprofile")
	if vulnerabilityMatching {
		root.PersistentFlags().StringVar(&a.trivyDB, "trivy-db", "", "offline trivy DB directory (trivy.db, metadata.json): commands that collect facts also match OS packages against it; never downloaded")
	}
	root.AddCommand(a.factsCommand(), a.scanCommand(), a.policyCommand(), a.driftCommand(), a.reportCommand(), a.waiversCommand(), a.agentCommand(), a.historyCommand(), a.versionCommand())
	root.AddCommand(a.buildCommands()...)
	return root
}

func (a *app) versionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the gpuhost version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if !fullBuild {
				_, err := fmt.Fprintln(a.stdout, "gpuhost", version.String(), "(lean build: no plan, manifest, sbom or --trivy-db)")
				return err
			}
			_, err := fmt.Fprintln(a.stdout, "gpuhost", version.String())
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
