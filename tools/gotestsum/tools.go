//go:build tools

// Package tools pins gotestsum, which runs `make test`'s Go tests and
// lists every skipped test with its reason at the end, so that a test that
// could not run is seen, not counted as a pass.
package tools

import _ "gotest.tools/gotestsum"
