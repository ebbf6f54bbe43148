//go:build !lean

package main

import (
	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/containers/trivy"
	"github.com/gpuhost/gpuhost/target/collector"
)

// The full build carries every command. `go build -tags lean` leaves out
// the ones that link the image builder and trivy (plan, manifest, sbom and
// --trivy-db), and boot and verify, which a node running the agent does not need: their code is
// most of the binary, and the pages start-up touches in it were most of the
// agent's resident memory.

// fullBuild says which build this is; `gpuhost version` tells.
const fullBuild = true

// vulnerabilityMatching says whether this build offers --trivy-db.
const vulnerabilityMatching = true

// vulnerabilityCollector matches OS packages against the trivy DB in db.
func vulnerabilityCollector(db string) collector.Collector { return trivy.VulnerabilitiesCollector(db) }

// buildCommands are the commands only the full build has.
func (a *app) buildCommands() []*cobra.Command {
	return []*cobra.Command{a.planCommand(), a.manifestCommand(), a.lockCommand(), a.treeDigestCommand(), a.sbomCommand(), a.bootCommand(), a.verifyCommand()}
}
