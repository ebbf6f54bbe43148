// Command packer-plugin-gpuhost is the gpuhost Packer plugin. Installed as
// github.com/gpuhost/gpuhost, its components are `source "gpuhost-rootfs"`,
// `provisioner "gpuhost-gpu"`, `provisioner "gpuhost-scan"`,
// `post-processor "gpuhost-gate"` and `data "gpuhost-ngc"`.
package main

import (
	"fmt"
	"os"

	"github.com/hashicorp/packer-plugin-sdk/plugin"

	"github.com/gpuhost/gpuhost/builder/gate"
	"github.com/gpuhost/gpuhost/builder/gpu"
	"github.com/gpuhost/gpuhost/builder/ngc"
	"github.com/gpuhost/gpuhost/builder/rootfs"
	"github.com/gpuhost/gpuhost/builder/scan"
	"github.com/gpuhost/gpuhost/builder/version"
	"github.com/gpuhost/gpuhost/containers/trivy"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run registers the components and serves them to Packer.
func run() error {
	pps := plugin.NewSet()
	pps.RegisterBuilder("rootfs", new(rootfs.Builder))
	pps.RegisterProvisioner("gpu", new(gpu.Provisioner))
	// The scan provisioner judges a cloud instance as the gate judges an
	// image, CVEs included.
	pps.RegisterProvisioner("scan", &scan.Provisioner{Vulnerabilities: trivy.VulnerabilitiesCollector})
	// The gate publishes an SBOM beside every image; trivy makes it.
	pps.RegisterPostProcessor("gate", &gate.PostProcessor{SBOM: trivy.SBOM, Vulnerabilities: trivy.VulnerabilitiesCollector})
	pps.RegisterDatasource("ngc", new(ngc.Datasource))
	pps.SetVersion(version.PluginVersion)
	return pps.Run()
}
