package network

import "testing"

// What the tests need of the facts document, which this package's own
// tests cannot import (the document imports this package): the external
// tests (document_test.go, package network_test) fill these in.
var (
	// ValidateFacts checks the facts d collected against the document's
	// schema.
	ValidateFacts func(d *Doc) error
	// EvaluatePack scans the facts d collected with the default pack and
	// params, as "gpuhost scan facts" does.
	EvaluatePack func(t *testing.T, d *Doc) map[string]PackResult
)

// Doc is doc, for the external tests.
type Doc = doc

// PackResult is packResult, for the external tests.
type PackResult = packResult

// Kind is the target kind d's facts are of.
func (d *doc) Kind() string { return d.kind }

// Statuses are the outcomes gather recorded, by collector.
func (d *doc) Statuses() map[string]string { return d.status }
