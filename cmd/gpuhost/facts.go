package main

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/checks"
	"github.com/gpuhost/gpuhost/checks/facts"
)

func (a *app) factsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "facts",
		Short: "Collect and print the facts document (gpuhost.facts/v1) of a target",
	}
	rootfs := &cobra.Command{
		Use:   "rootfs DIR",
		Short: "Facts of an unpacked image root filesystem",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := checks.Rootfs(cmd.Context(), args[0], a.collectOptions(nil))
			if err != nil {
				return untrusted(err)
			}
			return a.printFacts(f)
		},
	}
	var hf hostFlags
	host := &cobra.Command{
		Use:   "host",
		Short: "Facts of the running host",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f, err := checks.Host(cmd.Context(), hf.root, a.collectOptions(&hf))
			if err != nil {
				return untrusted(err)
			}
			return a.printFacts(f)
		},
	}
	hf.register(host)
	cmd.AddCommand(rootfs, host, a.factsImageCommand())
	return cmd
}

// printFacts writes the document. Collector failures are data in the
// document, and also logged, but printing the facts still succeeds: the
// verdict belongs to `scan`.
func (a *app) printFacts(f *facts.Facts) error {
	a.logCollectorProblems(f)
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(f)
}
