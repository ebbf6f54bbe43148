package tls_test

import (
	"encoding/json"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/tls"
)

func init() {
	tls.ValidateFacts = func(d *tls.Doc) error { return facts.Validate(*document(d)) }
	tls.DocumentJSON = func(d *tls.Doc) ([]byte, error) { return json.Marshal(document(d)) }
	tls.ValidateJSON = facts.ValidateJSON
}

// document is the facts document of what d collected.
func document(d *tls.Doc) *facts.Facts {
	f := facts.New(d.Kind(), "test", time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	f.TLS, f.Network = d.TLS, d.Network
	for name, o := range d.Outcomes() {
		f.Record(name, o[0], o[1])
	}
	for name, what := range d.NotJudgedBy() {
		f.NoteNotJudged(name, what)
	}
	return f
}
