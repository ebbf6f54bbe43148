//go:build tools

// Package tools pins the Packer version gpuhost is built and tested with.
// Packer is built from source as a tool (`make packer`); it is never vendored
// or shipped with gpuhost (its license since 1.10 is BUSL 1.1).
package tools

import _ "github.com/hashicorp/packer"
