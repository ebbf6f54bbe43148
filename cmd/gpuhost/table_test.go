package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gpuhost/gpuhost/render/report"
	"github.com/gpuhost/gpuhost/reports"
)

// The table of the sample trees at 80 and 200 columns, against goldens
// (go test -update rewrites them): no line is wider than the terminal, and
// the last 20 lines at 80 columns name every failure. Not applicable
// checks are one line; --show-not-applicable lists them.
func TestTableGoldenAtTerminalWidths(t *testing.T) {
	for _, tree := range []struct{ name, dir string }{{"weak", weak}, {"hardened", hardened}} {
		o := gpuhost(t, "", "scan", "rootfs", tree.dir, "--params", params, "--format", "json", "--fail-on", "none")
		if o.code != 0 {
			t.Fatalf("%s: exit %d\n%s", tree.name, o.code, o.stderr)
		}
		rep := jsonReport(t, o)
		var failed []string
		for _, r := range rep.Results {
			if r.Status == reports.StatusFail {
				failed = append(failed, r.ID)
			}
		}
		for _, width := range []int{80, 200} {
			var out bytes.Buffer
			if err := report.NewTable(report.WithWidth(width)).Render(&out, rep); err != nil {
				t.Fatal(err)
			}
			table := out.String()
			for _, l := range strings.Split(table, "\n") {
				if n := utf8.RuneCountInString(l); n > width {
					t.Errorf("%s at %d columns: a line is %d wide: %q", tree.name, width, n, l)
				}
			}
			if width == 80 {
				lines := strings.Split(strings.TrimRight(table, "\n"), "\n")
				last := strings.Join(lines[max(0, len(lines)-20):], "\n")
				for _, id := range failed {
					if !strings.Contains(last, id) {
						t.Errorf("%s at 80 columns: the last 20 lines do not name %s:\n%s", tree.name, id, last)
					}
				}
			}
			golden := filepath.Join("testdata", "golden", "table-"+tree.name+"-"+strconv.Itoa(width)+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s is missing: run go test ./cmd/gpuhost -run TestTableGoldenAtTerminalWidths -update", golden)
			} else if err != nil {
				t.Fatal(err)
			}
			if table != string(want) {
				t.Errorf("%s differs: run go test ./cmd/gpuhost -run TestTableGoldenAtTerminalWidths -update and review the diff", golden)
			}
		}
	}

	folded := gpuhost(t, "", "scan", "rootfs", weak, "--params", params, "--fail-on", "none")
	shown := gpuhost(t, "", "scan", "rootfs", weak, "--params", params, "--fail-on", "none", "--show-not-applicable")
	if !strings.Contains(folded.stdout, "checks do not apply to rootfs targets and are not listed (--show-not-applicable lists them).") ||
		strings.Contains(folded.stdout, "not applicable to rootfs targets (applies to") {
		t.Errorf("the table does not fold the not applicable checks:\n%s", folded.stdout)
	}
	if !strings.Contains(shown.stdout, "not applicable to rootfs targets (applies to") || strings.Contains(shown.stdout, "do not apply to rootfs targets") {
		t.Errorf("--show-not-applicable does not list them:\n%s", shown.stdout)
	}
}

// COLUMNS, where the shell exports it, sets the table's width before what
// the terminal says; neither gives the table at its full width.
func TestColumns(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "COLUMNS" {
				return v
			}
			return ""
		}
	}
	size := func(n int, err error) func() (int, error) { return func() (int, error) { return n, err } }
	for _, c := range []struct {
		columns string
		size    int
		err     error
		want    int
	}{
		{"", 120, nil, 120},
		{"90", 120, nil, 90},
		{"wide", 120, nil, 120},
		{"-3", 0, errors.New("not a terminal"), 0},
		{"", 0, nil, 0},
	} {
		if got := columns(env(c.columns), size(c.size, c.err)); got != c.want {
			t.Errorf("COLUMNS=%q, terminal %d (%v): %d; want %d", c.columns, c.size, c.err, got, c.want)
		}
	}
}
