//go:build !lean

package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/containers/trivy"
	"github.com/gpuhost/gpuhost/manifest"
	"github.com/gpuhost/gpuhost/target"
)

// sbomCommand writes the CycloneDX bill of materials of a rootfs or a disk
// image: the same document the gate attaches to a published image, so a
// reviewer can produce it locally and compare.
func (a *app) sbomCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "sbom",
		Short: "Write the CycloneDX SBOM (OS packages) of a rootfs or a disk image",
	}
	var out string
	emit := func(data []byte) error {
		if out == "" {
			_, err := a.stdout.Write(data)
			return err
		}
		return manifest.WriteFileAtomic(out, data, 0o644)
	}
	rootfs := &cobra.Command{
		Use:   "rootfs DIR",
		Short: "SBOM of an unpacked root filesystem",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := trivy.SBOM(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return emit(data)
		},
	}
	var imf imageFlags
	image := &cobra.Command{
		Use:   "image FILE",
		Short: "SBOM of a raw or qcow2 disk image, read without mounting it",
		Long:  imageLong,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := imageSBOM(cmd.Context(), args[0], imf.options(target.Options{}))
			if err != nil {
				return imageError(err)
			}
			return emit(data)
		},
	}
	imf.register(image)
	for _, c := range []*cobra.Command{rootfs, image} {
		c.Flags().StringVarP(&out, "output", "o", "", "write the SBOM to this file (atomically) instead of stdout")
	}
	cmd.AddCommand(rootfs, image)
	return cmd
}

// imageSBOM reads the image's package database as scan image reads its
// files (from the tree an encrypted root was made from, with --rootfs); a
// read error found only after the walk still fails the command, since an
// SBOM of part of a disk would understate what it holds.
func imageSBOM(ctx context.Context, file string, o target.Options) ([]byte, error) {
	fsys, done, err := target.ImageFiles(ctx, file, o)
	if err != nil {
		return nil, err
	}
	data, err := trivy.SBOMFS(ctx, fsys)
	if derr := done(); err == nil {
		err = derr
	}
	if err != nil {
		return nil, err
	}
	return data, nil
}
