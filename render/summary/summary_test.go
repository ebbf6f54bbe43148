package summary

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan"
)

var update = flag.Bool("update", false, "rewrite testdata/golden")

// fleet is a summary of two plain hosts and one per ref, with a check per
// title, every status among them.
func fleet(refs, titles []string) *scan.FleetSummary {
	s := scan.NewFleetSummary(scan.Thresholds{FailOn: "high"})
	s.ToolVersion = "test"
	statuses := []string{reports.StatusFail, reports.StatusPass, reports.StatusWaived, reports.StatusSkip, reports.StatusError}
	for h, ref := range append([]string{"gpu-node-01", "gpu-node-02"}, refs...) {
		rep := &reports.Report{Target: reports.Target{Kind: "host", Ref: ref}, PolicyDigest: "sha256:p"}
		for i, title := range titles {
			st := statuses[(h+i)%len(statuses)]
			if h < 2 && st == reports.StatusError {
				st = reports.StatusPass // two hosts whose scans can be trusted
			}
			rep.Results = append(rep.Results, reports.Result{
				ID: fmt.Sprintf("GH-X-%03d", i), Title: title,
				Severity: reports.Severities[i%len(reports.Severities)],
				Status:   st,
			})
		}
		s.Add(rep)
	}
	return s
}

func rendered(t *testing.T, format string, s *scan.FleetSummary) []byte {
	t.Helper()
	r, err := Lookup(format)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.Render(&buf, s); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestFormats(t *testing.T) {
	if got := Formats(); !slices.Equal(got, []string{"table", "json"}) {
		t.Errorf("Formats() = %q", got)
	}
}

// hostileFleet has hostile text for every host ref and check title.
func hostileFleet() *scan.FleetSummary { return fleet(testutil.Hostile, testutil.Hostile) }

// TestGolden's fleet is small enough to read: a few hostile refs and
// titles, none of the very long ones.
func TestGolden(t *testing.T) {
	s := fleet(testutil.Hostile[:4], testutil.Hostile[:9])
	for _, format := range Formats() {
		testutil.Golden(t, filepath.Join("testdata", "golden", "summary."+format), rendered(t, format, s), *update)
	}
}

// The table is one header line, a blank line, the column names and a line
// per check, whatever the titles and host refs hold; nothing in it can
// drive a terminal.
func TestTableHoldsHostileText(t *testing.T) {
	s := hostileFleet()
	out := string(rendered(t, "table", s))
	if got, want := strings.Count(out, "\n"), 3+len(s.Checks); got != want {
		t.Errorf("%d lines, want %d:\n%s", got, want, out)
	}
	for _, r := range out {
		if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r)) {
			t.Fatalf("control or format character %U in the table", r)
		}
	}
	lines := strings.Split(out, "\n")
	for _, c := range s.Rows() {
		i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, c.ID+" ") })
		if i < 0 {
			t.Errorf("no row for %s", c.ID)
		}
	}
}

// The JSON keeps the text as it was: escaping is the reader's business.
func TestJSONKeepsText(t *testing.T) {
	s := hostileFleet()
	var got scan.FleetSummary
	if err := json.Unmarshal(rendered(t, "json", s), &got); err != nil {
		t.Fatal(err)
	}
	if got.Hosts != s.Hosts || len(got.Checks) != len(s.Checks) {
		t.Fatalf("hosts %d checks %d, want %d and %d", got.Hosts, len(got.Checks), s.Hosts, len(s.Checks))
	}
	rows := s.Rows()
	for i, c := range got.Checks {
		if c.ID != rows[i].ID || c.Fail != rows[i].Fail || !slices.Equal(c.Failing, rows[i].Failing) {
			t.Errorf("row %d = %+v, want %+v", i, c, rows[i])
		}
		// Invalid UTF-8 comes back as U+FFFD; everything else verbatim.
		if want := rows[i].Title; utf8.ValidString(want) && c.Title != want {
			t.Errorf("row %d title %q, want %q", i, c.Title, want)
		}
	}
}
