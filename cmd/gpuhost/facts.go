package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/target"
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
			f, err := target.Rootfs(cmd.Context(), args[0], a.collectOptions(nil))
			if err != nil {
				return err
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
			f, err := target.Host(cmd.Context(), hf.root, a.collectOptions(&hf))
			if err != nil {
				return err
			}
			return a.printFacts(f)
		},
	}
	hf.register(host)
	cmd.AddCommand(a.collectsFacts(rootfs), a.collectsFacts(host), a.collectsFacts(a.factsImageCommand()))
	return cmd
}

// printFacts writes the document, collector failures included as data,
// and then exits 2 when a collector failed, as a scan of the same target
// would: facts saved from a target that could not be read are no evidence
// for a later scan facts.
func (a *app) printFacts(f *facts.Facts) error {
	a.logCollectorProblems(f)
	enc := json.NewEncoder(a.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(f); err != nil {
		return fmt.Errorf("writing facts: %w", err)
	}
	var failed []string
	for name, st := range f.Collectors {
		if st.Status == facts.StatusError {
			failed = append(failed, name)
		}
	}
	if len(failed) > 0 {
		sort.Strings(failed)
		return fmt.Errorf("collectors failed on this target: %s (their reasons are in the document)", strings.Join(failed, ", "))
	}
	return nil
}
