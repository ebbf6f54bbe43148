package diff

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files")

func load(t *testing.T, name string) *Diff {
	t.Helper()
	o, err := Load("testdata/old.json")
	if err != nil {
		t.Fatal(err)
	}
	n, err := Load(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return Compare(o, n, "old.json", name)
}

func ids(cs []Change) []string {
	out := make([]string, 0, len(cs))
	for _, c := range cs {
		out = append(out, c.ID)
	}
	return out
}

func TestCompareCategories(t *testing.T) {
	d := load(t, "new.json")
	want := map[string][]string{
		"new failures":     {"GH-TLS-001", "GH-RT-001"},
		"fixed":            {"GH-GPU-001", "GH-SSH-002"},
		"still failing":    {"GH-PIN-001"},
		"severity changed": {"GH-PIN-001"},
		"waivers added":    {"GH-NET-001"},
		"waivers expired":  {"GH-RT-001"},
		"checks added":     {"GH-SSH-005"},
		"checks removed":   {"GH-ENC-001"},
	}
	got := map[string][]string{
		"new failures": ids(d.NewFailures), "fixed": ids(d.Fixed), "still failing": ids(d.StillFailing),
		"severity changed": ids(d.SeverityChanged), "waivers added": ids(d.WaiversAdded),
		"waivers expired": ids(d.WaiversExpired), "checks added": ids(d.ChecksAdded), "checks removed": ids(d.ChecksRemoved),
	}
	for k, w := range want {
		if !slices.Equal(got[k], w) {
			t.Errorf("%s: got %v, want %v", k, got[k], w)
		}
	}
	if !d.HasNewFailures() {
		t.Error("HasNewFailures is false with two new failures")
	}
	if c := d.SeverityChanged[0]; c.OldSeverity != "high" || c.NewSeverity != "critical" {
		t.Errorf("severity change recorded as %s -> %s", c.OldSeverity, c.NewSeverity)
	}
}

func TestOnlyAFixIsNoNewFailure(t *testing.T) {
	d := load(t, "fixed.json")
	if d.HasNewFailures() {
		t.Errorf("new failures %v on a pair that only fixes", ids(d.NewFailures))
	}
	if got := ids(d.Fixed); !slices.Equal(got, []string{"GH-SSH-002"}) {
		t.Errorf("fixed = %v, want [GH-SSH-002]", got)
	}
	same := load(t, "old.json")
	for _, l := range same.lists() {
		if l.title != "Still failing" && len(*l.changes) > 0 {
			t.Errorf("a report compared with itself has %s: %v", l.title, ids(*l.changes))
		}
	}
}

// A waiver whose expiry shows up in the new report, without the status
// moving (still failing from an earlier lapse elsewhere), is still reported.
func TestWaiverMarkedExpired(t *testing.T) {
	o, _ := Parse([]byte(`{"schema":"gpuhost.report/v1","results":[{"id":"A","severity":"low","status":"fail","messages":[]}]}`), "o")
	n, err := Parse([]byte(`{"schema":"gpuhost.report/v1","results":[{"id":"A","severity":"low","status":"fail","messages":[],
		"waiver":{"justification":"j","approved_by":"b","expires":"2020-01-01","target":"*","expired":true}}]}`), "n")
	if err != nil {
		t.Fatal(err)
	}
	d := Compare(o, n, "o", "n")
	if got := ids(d.WaiversExpired); !slices.Equal(got, []string{"A"}) {
		t.Errorf("waivers expired = %v, want [A]", got)
	}
	if d.HasNewFailures() {
		t.Error("a check failing in both is not a new failure")
	}
}

func TestParseRejects(t *testing.T) {
	for name, doc := range map[string]string{
		"not json":       `{`,
		"wrong schema":   `{"schema":"gpuhost.facts/v1","results":[]}`,
		"duplicate id":   `{"schema":"gpuhost.report/v1","results":[{"id":"A","status":"pass"},{"id":"A","status":"fail"}]}`,
		"unknown status": `{"schema":"gpuhost.report/v1","results":[{"id":"A","status":"ok"}]}`,
		"no id":          `{"schema":"gpuhost.report/v1","results":[{"status":"pass"}]}`,
		"two documents":  `{"schema":"gpuhost.report/v1","results":[]} {}`,
	} {
		if _, err := Parse([]byte(doc), "in.json"); err == nil || !strings.Contains(err.Error(), "in.json") {
			t.Errorf("%s: err = %v, want an error naming in.json", name, err)
		}
	}
	if _, err := Load("testdata/missing.json"); err == nil {
		t.Error("Load of a missing file succeeded")
	}
}

func TestRenderGolden(t *testing.T) {
	d := load(t, "new.json")
	for _, format := range Formats() {
		var buf bytes.Buffer
		if err := registry.Render(&buf, d, format); err != nil {
			t.Fatal(err)
		}
		testutil.Golden(t, filepath.Join("testdata", "golden", "diff."+format), buf.Bytes(), *update)
	}
	if err := registry.Render(&bytes.Buffer{}, d, "sarif"); err == nil {
		t.Error("Render accepted an unknown format")
	}
}

// Hostile text in a report cannot break a Markdown table or reach a terminal
// as an escape sequence.
func TestRenderEscapes(t *testing.T) {
	n, err := Parse([]byte(`{"schema":"gpuhost.report/v1","results":[{"id":"A|B","title":"x\n| y <script>","severity":"high","status":"fail","messages":["\u001b[31mred\u001b[0m | z"]}]}`), "n")
	if err != nil {
		t.Fatal(err)
	}
	empty, _ := Parse([]byte(`{"schema":"gpuhost.report/v1","results":[]}`), "o")
	d := Compare(empty, n, "o", "n")
	var md, table bytes.Buffer
	if err := registry.Render(&md, d, "markdown"); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(md.String(), "\n") {
		if strings.HasPrefix(line, "| A") {
			if c := strings.Count(line, "|") - strings.Count(line, `\|`); c != 6 {
				t.Errorf("row has %d column bars, want 6: %q", c, line)
			}
		}
	}
	if strings.Contains(md.String(), "<script>") {
		t.Error("markdown carries raw HTML from the report")
	}
	if err := registry.Render(&table, d, "table"); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsRune(table.String(), 0x1b) {
		t.Error("table carries an escape character from the report")
	}
}

func FuzzParse(f *testing.F) {
	for _, name := range []string{"old.json", "new.json"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"schema":"gpuhost.report/v1","results":[{"id":"A","status":"waived","waiver":{"expired":true}}]}`))
	base, err := Load("testdata/old.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := Parse(data, "fuzz")
		if err != nil {
			return
		}
		for _, d := range []*Diff{Compare(base, rep, "a", "b"), Compare(rep, base, "b", "a")} {
			for _, format := range Formats() {
				if err := registry.Render(&bytes.Buffer{}, d, format); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}
