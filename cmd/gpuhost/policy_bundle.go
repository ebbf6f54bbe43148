package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/policies"
	"github.com/gpuhost/gpuhost/policy/bundle"
)

// policyBundleCommand is `gpuhost policy bundle`: a pack directory (or the
// embedded pack) as a signed OPA bundle that `scan --policy pack.tar.gz
// --verification-key pub.pem` accepts, and any change to refuses.
func (a *app) policyBundleCommand() *cobra.Command {
	var dir, keyFile, alg, output, revision string
	cmd := &cobra.Command{
		Use:   "bundle -o FILE",
		Short: "Write the pack as a signed OPA bundle (.tar.gz)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output == "" {
				return errors.New("-o is required: a bundle is binary")
			}
			opts := bundle.Options{Algorithm: alg, Revision: revision}
			if keyFile != "" {
				key, alg, err := readKey("--signing-key", keyFile, "--signing-alg", alg, true)
				if err != nil {
					return err
				}
				opts.SigningKey, opts.Algorithm = key, alg
			} else {
				a.log.Warn("no --signing-key: the bundle is unsigned, and scans with --verification-key will refuse it")
			}
			var fsys fs.FS = policies.FS
			name := "embedded"
			if dir != "" {
				info, err := os.Stat(dir)
				if err != nil {
					return fmt.Errorf("reading --policy: %w", err)
				}
				if !info.IsDir() {
					return fmt.Errorf("--policy %s: want a pack directory", dir)
				}
				fsys, name = os.DirFS(dir), dir
			}
			data, err := bundle.Build(fsys, name, opts)
			if err != nil {
				return err
			}
			if err := writeFileAtomic(output, data); err != nil {
				return err
			}
			a.log.Info("policy bundle written", "path", output, "signed", keyFile != "")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&dir, "policy", "", "pack directory to bundle (default: the embedded pack)")
	f.StringVar(&keyFile, "signing-key", "", "private key (PEM) to sign the bundle with, or the HMAC secret for HS algorithms")
	f.StringVar(&alg, "signing-alg", "", "JWT signing algorithm of --signing-key"+keyAlgHelp)
	f.StringVar(&revision, "revision", "", "manifest revision (default: derived from the content)")
	f.StringVarP(&output, "output", "o", "", "write the bundle to FILE (atomically)")
	return cmd
}
