package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/policies"
	"github.com/gpuhost/gpuhost/policy/lint"
	policyparams "github.com/gpuhost/gpuhost/policy/params"
)

// policyLintCommand is `gpuhost policy lint`: exit 0 for a clean pack, 1
// with findings, 2 when the pack cannot be read.
func (a *app) policyLintCommand() *cobra.Command {
	var dir, format string
	cmd := &cobra.Command{
		Use:   "lint",
		Short: "Review a pack: duplicate or misplaced ids, incomplete METADATA, undeclared params, Rego v0",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var fsys fs.FS = policies.FS
			name := "embedded"
			if dir != "" {
				info, err := os.Stat(dir)
				if err != nil {
					return fmt.Errorf("reading --policy: %w", err)
				}
				if !info.IsDir() {
					return fmt.Errorf("--policy %s: lint reads a pack directory, not a bundle", dir)
				}
				fsys, name = os.DirFS(dir), dir
			}
			schema, err := fs.ReadFile(fsys, policyparams.SchemaFile)
			if errors.Is(err, fs.ErrNotExist) {
				// A pack without its own schema configures the default
				// pack's parameters.
				schema, err = policies.ParamsSchema()
			}
			if err != nil {
				return fmt.Errorf("reading %s: %w", filepath.Join(name, policyparams.SchemaFile), err)
			}
			rev, err := lint.Review(cmd.Context(), fsys, name, schema)
			if err != nil {
				return err
			}
			findings := rev.Findings
			if format == "json" {
				if findings == nil {
					findings = []lint.Finding{}
				}
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				if err := enc.Encode(findings); err != nil {
					return err
				}
			} else {
				for _, f := range findings {
					// Paths as the user typed the pack, so an editor can jump there.
					f.File = filepath.Join(name, f.File)
					fmt.Fprintln(a.stdout, f.String())
				}
				// What was looked at, so a clean run is not silence.
				verdict := "no problems"
				if n := len(findings); n > 0 {
					verdict = fmt.Sprintf("%d %s", n, plural(n, "problem", "problems"))
				}
				fmt.Fprintf(a.stdout, "checked %d %s in %d policy files (and %d test files) of the %s pack: %s\n",
					rev.Checks, plural(rev.Checks, "check", "checks"), rev.PolicyFiles, rev.TestFiles, name, verdict)
			}
			if len(findings) > 0 {
				return &exitError{code: 1, err: fmt.Errorf("%s: %d lint findings", name, len(findings))}
			}
			a.log.Info("policy pack is lint-clean", "pack", name)
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "policy", "", "pack directory to lint (default: the embedded pack)")
	cmd.Flags().Var(choiceVar(&format, "text", "text", "json"), "format", "output format: text or json")
	return cmd
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
