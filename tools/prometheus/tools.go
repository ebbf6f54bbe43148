//go:build tools

// Package tools pins the Prometheus the discovery test scrapes the agent
// with: upstream's, built with Kubernetes service discovery, which
// Debian's prometheus package leaves out.
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
)
