//go:build tools

// Package tools pins packer-sdc, the generator of the HCL2 specs and docs of
// gpuhost's Packer components, to the packer-plugin-sdk version the main
// module uses (the generated code must match it).
package tools

import _ "github.com/hashicorp/packer-plugin-sdk/cmd/packer-sdc"
