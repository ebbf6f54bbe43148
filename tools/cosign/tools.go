//go:build tools

// Package tools pins cosign, which make test runs against the registry the
// e2e publishes to: the real verifier checks the signature and the SLSA
// provenance the gate attaches, not only gpuhost's own code.
package tools

import _ "github.com/sigstore/cosign/v2/cmd/cosign"
