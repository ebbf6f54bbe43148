//go:build tools

// Package tools pins regal, the Rego linter, which `make test` runs over
// the policy pack beside opa check --strict and opa fmt.
package tools

import _ "github.com/styrainc/regal"
