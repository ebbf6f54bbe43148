package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/checks"
	"github.com/gpuhost/gpuhost/checks/facts"
)

// scanImageCommand is `scan image FILE`: the pre-deploy gate over the disk a
// build produced, read without mounting, so CI needs no root or loop device.
func (a *app) scanImageCommand() *cobra.Command {
	var sf scanFlags
	cmd := &cobra.Command{
		Use:   "image FILE",
		Short: "Scan a disk image (raw or qcow2; ext4, whole disk or GPT/MBR partition) without mounting it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.scanCollected(cmd.Context(), &sf, func(ctx context.Context) (*facts.Facts, error) {
				return checks.Image(ctx, args[0], a.collectOptions(nil))
			})
		},
	}
	sf.register(cmd)
	return cmd
}

// factsImageCommand is `facts image FILE`.
func (a *app) factsImageCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "image FILE",
		Short: "Facts of a disk image (raw or qcow2), read without mounting it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			f, err := checks.Image(cmd.Context(), args[0], a.collectOptions(nil))
			if err != nil {
				return untrusted(err)
			}
			return a.printFacts(f)
		},
	}
}
