//go:build !lean

package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/builder/gpu"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/internal/userfile"
	"github.com/gpuhost/gpuhost/internal/version"
	"github.com/gpuhost/gpuhost/manifest"
)

// manifestFlags are what a manifest records that the tree cannot tell.
type manifestFlags struct {
	output       string
	config       string
	template     string
	mirror       string
	snapshot     string
	policyDigest string
}

func (f *manifestFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.output, "output", "o", "", "write the manifest to FILE atomically instead of stdout")
	cmd.Flags().StringVar(&f.config, "config", "", "take the pins from this gpuhost-gpu provisioner configuration (JSON)")
	cmd.Flags().StringVar(&f.template, "template", "", "record this template as the build's")
	cmd.Flags().StringVar(&f.mirror, "mirror", "", "record this package mirror")
	cmd.Flags().StringVar(&f.snapshot, "snapshot", "", "record this archive snapshot")
	cmd.Flags().StringVar(&f.policyDigest, "policy-digest", "", "record the digest of the policy pack the target passed")
}

// manifestCommand builds gpuhost.manifest/v1 documents from an existing
// rootfs or the running host, with the same code the provisioner bakes
// into images.
func (a *app) manifestCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "manifest",
		Short: "Build the baked manifest (gpuhost.manifest/v1) of a rootfs or this host",
	}
	var rf manifestFlags
	rootfs := &cobra.Command{
		Use:   "rootfs DIR",
		Short: "Manifest of an unpacked image root filesystem",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return a.writeManifest(cmd, args[0], &rf)
		},
	}
	rf.register(rootfs)
	var hf manifestFlags
	var hostRoot string
	host := &cobra.Command{
		Use:   "host",
		Short: "Manifest of the running host",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.writeManifest(cmd, hostRoot, &hf)
		},
	}
	hf.register(host)
	host.Flags().StringVar(&hostRoot, "host-root", "/", "where the host's root filesystem is mounted")
	cmd.AddCommand(rootfs, host)
	return cmd
}

func (a *app) writeManifest(cmd *cobra.Command, dir string, f *manifestFlags) error {
	opts := manifest.Options{Time: time.Now()}
	if f.config != "" {
		data, err := userfile.Read(f.config, userfile.MaxConfig)
		if err != nil {
			return fmt.Errorf("reading %s: %w", f.config, err)
		}
		cfg, err := gpu.DecodeJSON(data)
		if err != nil {
			return fmt.Errorf("%s: %w", f.config, err)
		}
		opts = cfg.ManifestOptions(opts.Time)
	}
	t, err := gpu.BuildTime(opts.Time)
	if err != nil {
		return err
	}
	opts.Time = t
	set := func(dst *string, v string) {
		if v != "" {
			*dst = v
		}
	}
	set(&opts.Build.Template, f.template)
	set(&opts.Build.Mirror, f.mirror)
	set(&opts.Build.Snapshot, f.snapshot)
	set(&opts.PolicyDigest, f.policyDigest)
	if opts.Build.PluginVersion == "" {
		opts.Build.PluginVersion = version.String()
	}

	fsys, closer, err := sysroot.Open(dir)
	if err != nil {
		return err
	}
	defer closer.Close()
	m, err := manifest.Build(cmd.Context(), fsys, opts)
	if err != nil {
		return err
	}
	if f.output != "" {
		return m.Write(f.output)
	}
	data, err := m.Marshal()
	if err != nil {
		return err
	}
	_, err = a.stdout.Write(data)
	return err
}
