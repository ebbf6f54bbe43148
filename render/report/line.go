package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/gpuhost/gpuhost/reports"
)

// LineEncoder writes reports as NDJSON: each one the json format's
// gpuhost.report/v1 document on a single line, byte for byte what the json
// renderer writes once its indentation is taken out.
//
// A fleet scan writes the same checks' titles, descriptions, remediations and
// controls for every host; encoding them was a fifth of the CPU of
// `scan facts --format json`. The encoder keeps each check's encoded static
// text and writes only what varies per host (status, messages, waiver).
// It is safe for concurrent use, so every worker can encode its own reports.
type LineEncoder struct {
	mu sync.Mutex
	// checks is keyed by check id alone; the rest of the text is compared
	// on a hit, which costs little because equal strings from the same
	// check share their bytes.
	checks map[string]*encodedCheck
	// lastLen sizes the next line's buffer, so that a 40 KB line is not
	// grown a dozen times.
	lastLen atomic.Int64
}

// NewLineEncoder returns an empty LineEncoder.
func NewLineEncoder() *LineEncoder {
	return &LineEncoder{checks: map[string]*encodedCheck{}}
}

// maxEncodedChecks bounds the cache: a pack has tens of checks, but results
// built outside the engine could all differ.
const maxEncodedChecks = 4096

// checkText is a result's text that comes from its check, not its target.
type checkText struct {
	id, title, description, severity, remediation, pkg, file, location string
}

// encodedCheck is a check's text as JSON, in the three runs that the
// per-target fields (status, messages, waiver) separate.
type encodedCheck struct {
	text     checkText
	controls map[string][]string
	// head runs from the opening brace to `"status":`, middle from the comma
	// after the messages through controls, and tail is package, file and location.
	head, middle, tail []byte
}

// Append appends rep's line, with its newline, to dst.
func (e *LineEncoder) Append(dst []byte, rep *reports.Report) ([]byte, error) {
	if dst == nil {
		dst = make([]byte, 0, e.lastLen.Load()+e.lastLen.Load()/8)
	}
	start := len(dst)
	dst = append(dst, `{"schema":`...)
	dst = appendString(dst, rep.Schema)
	dst = append(dst, `,"target":{"kind":`...)
	dst = appendString(dst, rep.Target.Kind)
	dst = append(dst, `,"ref":`...)
	dst = appendString(dst, rep.Target.Ref)
	dst = append(dst, `,"scanned_at":`...)
	dst = appendString(dst, rep.Target.ScannedAt)
	if rep.Target.Hostname != "" {
		dst = append(dst, `,"hostname":`...)
		dst = appendString(dst, rep.Target.Hostname)
	}
	dst = append(dst, `},"summary":{"total":`...)
	dst = strconv.AppendInt(dst, int64(rep.Summary.Total), 10)
	dst = append(dst, `,"by_status":`...)
	dst = appendMap(dst, rep.Summary.ByStatus, appendInt)
	dst = append(dst, `,"failed_by_severity":`...)
	dst = appendMap(dst, rep.Summary.BySeverity, appendInt)
	if rep.Summary.NotApplicable != 0 {
		dst = append(dst, `,"skipped_not_applicable":`...)
		dst = strconv.AppendInt(dst, int64(rep.Summary.NotApplicable), 10)
	}
	dst = append(dst, `},"coverage":`...)
	dst = appendCoverage(dst, &rep.Coverage)
	dst = append(dst, `,"results":`...)
	if rep.Results == nil {
		dst = append(dst, "null"...)
	} else {
		dst = append(dst, '[')
		for i := range rep.Results {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = e.appendResult(dst, &rep.Results[i]); err != nil {
				return dst, err
			}
		}
		dst = append(dst, ']')
	}
	dst = append(dst, `,"facts_digest":`...)
	dst = appendString(dst, rep.FactsDigest)
	dst = append(dst, `,"policy_digest":`...)
	dst = appendString(dst, rep.PolicyDigest)
	dst = append(dst, `,"tool_version":`...)
	dst = appendString(dst, rep.ToolVersion)
	if len(rep.Collectors) > 0 {
		dst = append(dst, `,"collectors":`...)
		dst = appendMap(dst, rep.Collectors, appendCollector)
	}
	// One each per report, and small: the encoder's own bytes.
	for _, part := range []struct {
		name  string
		value any
		set   bool
	}{{"compliance", rep.Compliance, rep.Compliance != nil}, {"caveats", rep.Caveats, len(rep.Caveats) > 0},
		{"judged", rep.Judged, rep.Judged != nil}} {
		if !part.set {
			continue
		}
		b, err := encodeCompact(part.value)
		if err != nil {
			return dst, err
		}
		dst = append(dst, `,"`+part.name+`":`...)
		dst = append(dst, b...)
	}
	dst = append(dst, "}\n"...)
	e.lastLen.Store(int64(len(dst) - start))
	return dst, nil
}

func appendInt(dst []byte, n int) []byte { return strconv.AppendInt(dst, int64(n), 10) }

// appendCoverage writes the coverage as encoding/json would: it varies per
// host, so it cannot be cached with the check text.
func appendCoverage(dst []byte, c *reports.Coverage) []byte {
	dst = append(dst, `{"checks":`...)
	dst = appendInt(dst, c.Checks)
	dst = append(dst, `,"evaluated":`...)
	dst = appendInt(dst, c.Evaluated)
	dst = append(dst, `,"not_evaluated_by_severity":`...)
	dst = appendMap(dst, c.NotEvaluated, appendInt)
	dst = append(dst, `,"gaps":`...)
	if c.Gaps == nil {
		dst = append(dst, "null"...)
		return appendNotJudged(dst, c.NotJudged)
	}
	dst = append(dst, '[')
	for i, g := range c.Gaps {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"id":`...)
		dst = appendString(dst, g.ID)
		dst = append(dst, `,"title":`...)
		dst = appendString(dst, g.Title)
		dst = append(dst, `,"severity":`...)
		dst = appendString(dst, g.Severity)
		dst = append(dst, `,"status":`...)
		dst = appendString(dst, g.Status)
		dst = append(dst, `,"reason":`...)
		dst = appendString(dst, g.Reason)
		dst = append(dst, '}')
	}
	dst = append(dst, ']')
	return appendNotJudged(dst, c.NotJudged)
}

// appendNotJudged ends the coverage with its not_judged list, left out
// when empty as encoding/json leaves it.
func appendNotJudged(dst []byte, list []reports.NotJudged) []byte {
	if len(list) == 0 {
		return append(dst, '}')
	}
	dst = append(dst, `,"not_judged":[`...)
	for i, n := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"collector":`...)
		dst = appendString(dst, n.Collector)
		dst = append(dst, `,"what":`...)
		dst = appendString(dst, n.What)
		dst = append(dst, '}')
	}
	return append(dst, "]}"...)
}

func appendCollector(dst []byte, c reports.CollectorStatus) []byte {
	dst = append(dst, `{"status":`...)
	dst = appendString(dst, c.Status)
	if c.Reason != "" {
		dst = append(dst, `,"reason":`...)
		dst = appendString(dst, c.Reason)
	}
	return append(dst, '}')
}

// appendMap appends m as an object with its names sorted, as the encoder
// writes maps. Names that are not all printable ASCII, where encoders differ
// in how they order and escape, are left to the encoder.
func appendMap[V any](dst []byte, m map[string]V, value func([]byte, V) []byte) []byte {
	if m == nil {
		return append(dst, "null"...)
	}
	names := make([]string, 0, len(m))
	for name := range m {
		if !plainASCII(name) {
			b, _ := encodeCompact(m)
			return append(dst, b...)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	dst = append(dst, '{')
	for i, name := range names {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, name)
		dst = append(dst, ':')
		dst = value(dst, m[name])
	}
	return append(dst, '}')
}

func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func (e *LineEncoder) appendResult(dst []byte, r *reports.Result) ([]byte, error) {
	c := e.check(r)
	dst = append(dst, c.head...)
	dst = appendString(dst, r.Status)
	dst = append(dst, `,"messages":`...)
	dst = appendStrings(dst, r.Messages)
	dst = append(dst, c.middle...)
	if r.Waiver != nil {
		w, err := encodeCompact(r.Waiver)
		if err != nil {
			return dst, fmt.Errorf("encoding the waiver of %s: %w", r.ID, err)
		}
		dst = append(dst, `,"waiver":`...)
		dst = append(dst, w...)
	}
	dst = append(dst, c.tail...)
	if r.OutOfScope {
		dst = append(dst, `,"out_of_scope":true`...)
	}
	if len(r.Findings) > 0 {
		dst = append(dst, `,"findings":[`...)
		for i, f := range r.Findings {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"message":`...)
			dst = appendString(dst, f.Message)
			dst = appendOptional(dst, `,"file":`, f.File)
			if f.Line != 0 {
				dst = appendInt(append(dst, `,"line":`...), f.Line)
			}
			dst = appendOptional(dst, `,"subject":`, f.Subject)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	if len(r.Related) > 0 {
		dst = append(dst, `,"related":[`...)
		for i, rel := range r.Related {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(append(dst, `{"file":`...), rel.File)
			dst = appendInt(append(dst, `,"line":`...), rel.Line)
			dst = appendString(append(dst, `,"message":`...), rel.Message)
			dst = append(dst, '}')
		}
		dst = append(dst, ']')
	}
	return append(dst, '}'), nil
}

// check returns r's check text encoded, from the cache when r's controls are
// the ones cached with it.
func (e *LineEncoder) check(r *reports.Result) *encodedCheck {
	text := checkText{r.ID, r.Title, r.Description, r.Severity, r.Remediation, r.Package, r.File, r.Location}
	e.mu.Lock()
	c, ok := e.checks[r.ID]
	e.mu.Unlock()
	if ok && c.text == text && sameControls(c.controls, r.Controls) {
		return c
	}
	c = encodeCheck(text, r.Controls)
	e.mu.Lock()
	if len(e.checks) >= maxEncodedChecks {
		clear(e.checks)
	}
	e.checks[r.ID] = c
	e.mu.Unlock()
	return c
}

// sameControls compares two control maps, without walking them when they
// are the same map, as a check's results share theirs.
func sameControls(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer() {
		return true
	}
	return maps.EqualFunc(a, b, slices.Equal)
}

// encodeCheck writes a check's text in the json renderer's field order,
// split where the per-target fields go.
func encodeCheck(text checkText, controls map[string][]string) *encodedCheck {
	c := &encodedCheck{text: text, controls: controls}
	c.head = append(c.head, `{"id":`...)
	c.head = appendString(c.head, text.id)
	c.head = append(c.head, `,"title":`...)
	c.head = appendString(c.head, text.title)
	c.head = appendOptional(c.head, `,"description":`, text.description)
	c.head = append(c.head, `,"severity":`...)
	c.head = appendString(c.head, text.severity)
	c.head = append(c.head, `,"status":`...)
	c.middle = appendOptional(c.middle, `,"remediation":`, text.remediation)
	if len(controls) > 0 {
		c.middle = append(c.middle, `,"controls":`...)
		c.middle = appendMap(c.middle, controls, appendStrings)
	}
	c.tail = appendOptional(c.tail, `,"package":`, text.pkg)
	c.tail = appendOptional(c.tail, `,"file":`, text.file)
	c.tail = appendOptional(c.tail, `,"location":`, text.location)
	return c
}

// appendOptional writes an omitempty string field: nothing when s is empty.
func appendOptional(dst []byte, name, s string) []byte {
	if s == "" {
		return dst
	}
	return appendString(append(dst, name...), s)
}

func appendStrings(dst []byte, list []string) []byte {
	if list == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, '[')
	for i, s := range list {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendString(dst, s)
	}
	return append(dst, ']')
}

// encodeCompact encodes v as the json renderer does (no HTML escaping), on
// one line and without the trailing newline.
func encodeCompact(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// appendString appends s quoted. Printable ASCII, nearly every status and
// message, is written here, with the two escapes JSON has only one way to
// write; anything else (control characters, non-ASCII) goes through the
// encoder, whose escaping rules stand.
func appendString(dst []byte, s string) []byte {
	start := len(dst)
	dst = append(dst, '"')
	from := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 0x20 && c < utf8.RuneSelf && c != '"' && c != '\\':
		case c < 0x20 || c >= utf8.RuneSelf:
			// A Go string always encodes: invalid UTF-8 is replaced.
			b, _ := encodeCompact(s)
			return append(dst[:start], b...)
		default:
			dst = append(dst, s[from:i]...)
			dst = append(dst, '\\', c)
			from = i + 1
		}
	}
	dst = append(dst, s[from:]...)
	return append(dst, '"')
}
