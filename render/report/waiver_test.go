package report

import (
	"html"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/reports"
)

// TestEveryFormatShowsTheWaiver: a waived result says who approved it, why,
// until when, under which ticket and for which scope, in every format. An
// expired waiver still names its approver, date and ticket on the failure.
func TestEveryFormatShowsTheWaiver(t *testing.T) {
	rep := loadReport(t)
	for _, format := range resultFormats() {
		out := string(rendered(t, mustLookup(t, format), rep))
		// Formats escape differently (&lt; in XML and HTML, \u003c in
		// JSON, \* in Markdown); compare the text that needs no escaping.
		text := html.UnescapeString(strings.NewReplacer(`\*`, "*", `\u0026`, "&").Replace(out))
		for _, want := range []string{
			"alice@example.com", "2026-12-31", "SEC-1234", "Root encryption is done by the SAN", "gpu-a*", "rootfs",
			"bob@example.com", "2025-01-31", "SEC-0999",
		} {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %q", format, want)
			}
		}
	}
}

func TestWaiverLine(t *testing.T) {
	for _, c := range []struct {
		w    *reports.Waiver
		want string
	}{
		{nil, "waived"},
		{&reports.Waiver{ApprovedBy: "a", Expires: "2030-01-01", Justification: "j"}, "waived by a until 2030-01-01: j"},
		{&reports.Waiver{ApprovedBy: "a", Expires: "2030-01-01", Justification: "j", Ticket: "T-1",
			Scope: &reports.WaiverScope{Kinds: []string{"host"}}}, "waived by a until 2030-01-01, ticket T-1, scope kinds host: j"},
		{&reports.Waiver{ApprovedBy: "a", Expires: "2030-01-01", Justification: "j",
			Scope: &reports.WaiverScope{Hosts: []string{"g1", "g2"}}}, "waived by a until 2030-01-01, scope hosts g1, g2: j"},
	} {
		if got := waiverLine(c.w); got != c.want {
			t.Errorf("waiverLine(%+v) = %q, want %q", c.w, got, c.want)
		}
	}
}
