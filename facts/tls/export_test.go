package tls

// What the tests need of the facts document, which this package's own
// tests cannot import (the document imports this package): the external
// tests (document_test.go, package tls_test) fill these in.
var (
	// ValidateFacts checks the facts d collected against the document's
	// schema.
	ValidateFacts func(d *Doc) error
	// DocumentJSON is the facts document of what d collected, as JSON.
	DocumentJSON func(d *Doc) ([]byte, error)
	// ValidateJSON checks a facts document against its schema.
	ValidateJSON func(data []byte) error
)

// Doc is doc, for the external tests.
type Doc = doc

// Kind is the target kind d's facts are of.
func (d *doc) Kind() string { return d.kind }

// Outcomes are the outcomes recorded, by collector: status and reason.
func (d *doc) Outcomes() map[string][2]string { return d.status }

// NotJudgedBy is what d notes as found and not judged, by collector.
func (d *doc) NotJudgedBy() map[string][]string {
	out := map[string][]string{}
	for _, n := range d.NotJudged {
		out[n.Collector] = append(out[n.Collector], n.What)
	}
	return out
}
