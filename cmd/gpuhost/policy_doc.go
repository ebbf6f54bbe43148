package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/policy/catalog"
	catalogdoc "github.com/gpuhost/gpuhost/render/catalog"
)

// policyDocCommand renders the pack as a review document; it belongs under
// `gpuhost policy`.
func (a *app) policyDocCommand() *cobra.Command {
	var pf policyFlags
	var format, output string
	cmd := &cobra.Command{
		Use:   "doc",
		Short: "Render the pack as a catalog: every check, its parameters, and a control matrix",
		Long: "Render the policy pack for security review: each check's id, title, severity, description,\n" +
			"remediation, targets, the collectors it needs and the parameters it reads, then every parameter's\n" +
			"value and a matrix of compliance controls against checks. HTML is one self-contained file.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			e, err := pf.engine(cmd.Context())
			if err != nil {
				return err
			}
			r, err := catalogdoc.Lookup(format)
			if err != nil {
				return err
			}
			var buf bytes.Buffer
			if err := r.Render(&buf, catalog.New(e)); err != nil {
				return err
			}
			if output == "" || output == "-" {
				_, err := a.stdout.Write(buf.Bytes())
				return err
			}
			if err := writeFileAtomic(output, buf.Bytes()); err != nil {
				return err
			}
			a.log.Info("policy catalog written", "format", format, "path", output)
			return nil
		},
	}
	pf.register(cmd)
	cmd.Flags().Var(choiceVar(&format, "markdown", catalogdoc.Formats()...), "format", "output format: "+strings.Join(catalogdoc.Formats(), ", "))
	cmd.Flags().StringVarP(&output, "output", "o", "", "write to this file (atomically) instead of stdout")
	return cmd
}

// writeFileAtomic writes data beside path and renames it over path, so a
// reader never sees half a document.
func writeFileAtomic(path string, data []byte) error {
	if err := outputProblem(path); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".gpuhost-*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
