//go:build lean

package main

import (
	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/target/collector"
)

// The lean build: see build_full.go.

const fullBuild = false

const vulnerabilityMatching = false

// vulnerabilityCollector is never called: the lean build has no --trivy-db.
func vulnerabilityCollector(string) collector.Collector { return nil }

func (a *app) buildCommands() []*cobra.Command { return nil }
