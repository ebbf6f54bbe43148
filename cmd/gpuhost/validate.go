package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/gpu"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/render/escape"
	"github.com/gpuhost/gpuhost/scan"
)

// validationSchema names the shape `gpuhost validate --format json` writes.
const validationSchema = "gpuhost.validation/v1"

// validationReport is `gpuhost validate --format json`: the node, the
// verdict with the exit code it gives, and every step (docs/scanning.md).
type validationReport struct {
	Schema   string                 `json:"schema"`
	Hostname string                 `json:"hostname"`
	HostRoot string                 `json:"host_root"`
	Verdict  string                 `json:"verdict"`
	ExitCode int                    `json:"exit_code"`
	GPUs     []facts.ValidationGPU  `json:"gpus"`
	Steps    []facts.ValidationStep `json:"steps"`
}

type validateFlags struct {
	root    string
	params  string
	timeout time.Duration
	format  string
	skip    []string
	image   string
}

func (a *app) validateCommand() *cobra.Command {
	var o validateFlags
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Validate this node's GPUs before it takes GPU work, as gpu-operator's validator does",
		Long: "validate runs, in order: driver (the loaded kernel module is libnvidia-ml's version, and NVML reads\n" +
			"every GPU); container (the CDI spec names every GPU, and a container containerd starts with\n" +
			"nvidia.com/gpu=all lists every GPU NVML lists); cuda (vectorAdd from " + gpu.VectorAddPath + "\n" +
			"passes on each GPU); fabric (on NVSwitch systems: nvidia-fabricmanager runs, the board's NVSwitches\n" +
			"are on the PCI bus, every GPU's fabric registration completed); mig (every GPU's MIG mode is\n" +
			"params.gpu_mig's). A step that cannot run says \"not run\" and why, never passed.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.validate(cmd.Context(), &o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.root, "host-root", "/", "where the host's root filesystem is mounted (a DaemonSet mounts it at /host); programs run chrooted into it")
	f.StringVar(&o.params, "params", "", "parameters file (YAML or JSON); its gpu_mig (true, false or null) is the MIG mode every GPU must be in")
	f.Var(timeoutVar(&o.timeout, gpu.DefaultStepTimeout), "timeout", "the most one step may take (the container's run; vectorAdd on every GPU in turn)")
	f.Var(choiceVar(&o.format, "table", "table", "json"), "format", "output: table or json")
	f.Var(choiceListVar(&o.skip, gpu.SkippableSteps()...), "skip", "leave steps out, recorded as not run and not required: "+strings.Join(gpu.SkippableSteps(), ", ")+" (repeatable or comma-separated)")
	f.StringVar(&o.image, "image", "", "the image the container step runs, from containerd's k8s.io namespace (default: the first image the bake seeded)")
	return cmd
}

// validate runs the validation and writes it; the verdict is the exit code.
func (a *app) validate(ctx context.Context, o *validateFlags) error {
	opts, err := validateOptions(ctx, o.params)
	if err != nil {
		return err
	}
	opts = append(opts, gpu.WithStepTimeout(o.timeout), gpu.WithSkip(o.skip...), gpu.WithImage(o.image))
	fsys, closer, err := sysroot.Open(o.root)
	if err != nil {
		return fmt.Errorf("opening --host-root: %w", err)
	}
	defer closer.Close()
	env := &collect.Env{FS: fsys, Live: true, Log: a.log, UnitState: a.unitState}
	v, err := gpu.NewValidator(a.nvml(), opts...).Validate(ctx, env)
	if err != nil {
		return err
	}
	host, _ := os.Hostname()
	rep := validationReport{Schema: validationSchema, Hostname: host, HostRoot: fsys.Root(), Verdict: gpu.Verdict(v), GPUs: v.GPUs, Steps: v.Steps}
	switch rep.Verdict {
	case gpu.VerdictFailed:
		rep.ExitCode = scan.ExitFail
	case gpu.VerdictIncomplete:
		rep.ExitCode = scan.ExitUntrusted
	}
	if o.format == "json" {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		err = enc.Encode(rep)
	} else {
		err = writeValidationTable(a.stdout, &rep)
	}
	if err != nil {
		return fmt.Errorf("writing the validation: %w", err)
	}
	if rep.ExitCode != scan.ExitPass {
		return &exitError{code: rep.ExitCode}
	}
	return nil
}

// validateOptions reads the MIG mode params want through the pack, so the
// params file is checked against the same schema a scan checks it with.
func validateOptions(ctx context.Context, params string) ([]gpu.ValidateOption, error) {
	if params != "" {
		if _, err := os.Stat(params); err != nil {
			return nil, fmt.Errorf("reading --params: %w", err)
		}
	}
	e, err := scan.Pack{Params: params}.Engine(ctx)
	if err != nil {
		return nil, err
	}
	mig, err := gpu.MIGWant(e.Params())
	if err != nil {
		return nil, err
	}
	return []gpu.ValidateOption{gpu.WithMIG(mig)}, nil
}

// writeValidationTable writes one row per step, then one per GPU a step did
// not pass on; every text from the host goes through the terminal escaper.
func writeValidationTable(w io.Writer, rep *validationReport) error {
	names := []string{}
	for _, g := range rep.GPUs {
		if !slices.Contains(names, g.Name) {
			names = append(names, g.Name)
		}
	}
	fmt.Fprintf(w, "GPU validation of %s (host root %s): %d GPUs", escape.Terminal(rep.Hostname), escape.Terminal(rep.HostRoot), len(rep.GPUs))
	if len(names) > 0 {
		fmt.Fprintf(w, " (%s)", escape.Terminal(strings.Join(names, ", ")))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "STEP\tSTATUS\tREQUIRED\tREASON")
	for _, s := range rep.Steps {
		req := "no"
		if s.Required {
			req = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, statusText(s.Status), req, escape.Terminal(s.Reason))
		for _, g := range s.GPUs {
			if g.Status != facts.ValidationPassed {
				fmt.Fprintf(tw, "  GPU %d\t%s\t\t%s: %s\n", g.Index, statusText(g.Status), escape.Terminal(g.UUID), escape.Terminal(g.Detail))
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\nverdict: %s (exit %d)\n", rep.Verdict, rep.ExitCode)
	return err
}

func statusText(s string) string { return strings.ReplaceAll(s, "_", " ") }
