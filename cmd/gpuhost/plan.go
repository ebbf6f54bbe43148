//go:build !lean

package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/builder/gpu"
	"github.com/gpuhost/gpuhost/internal/userfile"
)

// planCommand prints the script the gpuhost-gpu provisioner would run for a
// configuration, so that it can be reviewed before any image is built.
func (a *app) planCommand() *cobra.Command {
	var configPath string
	cmd := &cobra.Command{
		Use:   "plan --config FILE",
		Short: "Print the install plan the gpuhost-gpu provisioner runs for a configuration",
		Long: "plan renders the POSIX sh script that the gpuhost-gpu Packer provisioner uploads and runs, from the provisioner's configuration written as JSON (the fields of the provisioner block; - reads stdin). " +
			"The configuration must name distro and, for DKMS or a held kernel, target_kernel: the provisioner reads those from the target, which plan has not got.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if configPath == "" {
				return fmt.Errorf("--config is required")
			}
			var data []byte
			var err error
			if configPath == "-" {
				data, err = io.ReadAll(io.LimitReader(a.stdin, 1<<20))
			} else {
				data, err = userfile.Read(configPath, userfile.MaxConfig)
			}
			if err != nil {
				return fmt.Errorf("reading %s: %w", configPath, err)
			}
			cfg, err := gpu.DecodeJSON(data)
			if err != nil {
				return fmt.Errorf("%s: %w", configPath, err)
			}
			plan, err := gpu.RenderPlan(*cfg)
			if err != nil {
				return fmt.Errorf("%s: %w", configPath, err)
			}
			_, err = io.WriteString(a.stdout, plan)
			return err
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "the provisioner configuration as JSON (- for stdin)")
	return cmd
}
