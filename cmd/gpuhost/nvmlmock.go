//go:build nvmlmock

package main

import "github.com/gpuhost/gpuhost/internal/testutil/gpumock"

// A binary built with the nvmlmock tag (only ever by a test) sees gpumock's
// DGX A100 in place of NVML: the agent's image in the real-node test runs on
// containerd with plain runc, where no NVIDIA runtime puts libnvidia-ml and
// the GPUs' device nodes into the container.
func init() {
	defaultNVML = gpumock.DGXA100
}
