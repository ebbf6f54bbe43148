package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/policies"
)

// policyExportCommand is `gpuhost policy export DIR`: the embedded pack as
// one directory, the way a security team reviews it, extends it or signs
// it with `policy bundle --policy DIR`. In a checkout the pack's folders
// sit in more than one place (policies/ and each domain's folder beside
// its collector); this is the tree the binary ships.
func (a *app) policyExportCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "export DIR",
		Short: "Write the embedded pack into a new directory as one tree",
		Long: "Write the embedded pack into DIR, a new or empty directory, as the binary ships it: one tree, " +
			"params.default.yaml and params.schema.json at its top and a folder per domain. In a checkout the " +
			"pack's folders sit in policies/ and in the domains' folders beside their collectors " +
			"(facts/secureboot/ is sb/); the exported tree is what a security review reads, what a custom pack " +
			"starts from, and what `gpuhost policy bundle --policy DIR` signs.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := args[0]
			if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
				return fmt.Errorf("policy export %s: the directory is not empty; name a new or empty one", dir)
			}
			if err := os.CopyFS(dir, policies.FS); err != nil {
				return fmt.Errorf("policy export %s: %w", dir, err)
			}
			fmt.Fprintf(a.stderr, "wrote the embedded pack to %s\n", dir)
			return nil
		},
	}
}
