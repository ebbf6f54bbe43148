//go:build tools

// Package tools pins containerd 2, built from source with go build, for
// the variant of the real-node test that runs the agent's DaemonSet over a
// runtime that makes recursive read-only mounts (Debian 12 ships
// containerd 1.6, which cannot).
package tools

import (
	_ "github.com/containerd/containerd/v2/cmd/containerd"
	_ "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2"
)
