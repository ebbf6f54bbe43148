package runtime

// ValidateFacts checks the facts d collected against the document's
// schema. This package's own tests cannot import the document (it imports
// this package); the external tests (document_test.go, package
// runtime_test) fill it in.
var ValidateFacts func(d *Doc) error

// Doc is doc, for the external tests.
type Doc = doc

// Kind is the target kind d's facts are of.
func (d *doc) Kind() string { return d.kind }
