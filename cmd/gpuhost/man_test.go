package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite docs/man from the command tree")

// manDir holds gpuhost(1) and a page per command, which the systemd units
// name in Documentation= and make install-man installs.
var manDir = filepath.Join("..", "..", "docs", "man")

// manDate dates the pages by hand: a generation date would make every
// regeneration a diff although no command changed.
var manDate = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

var manHeader = &doc.GenManHeader{
	Title:   "GPUHOST",
	Section: "1",
	Source:  "gpuhost",
	Manual:  "gpuhost manual",
	Date:    &manDate,
}

// genManPages writes a page per command of root into dir, as cobra's doc
// package makes them, with what cobra gets wrong whatever the help texts
// say mended (see literalHelp and fixManPage).
func genManPages(root *cobra.Command, dir string) error {
	literalHelp(root)
	if err := doc.GenManTree(root, manHeader, dir); err != nil {
		return err
	}
	pages, err := filepath.Glob(filepath.Join(dir, "*.1"))
	if err != nil {
		return err
	}
	exits := map[string]string{}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if e := c.Annotations[exitStatusKey]; e != "" {
			exits[strings.ReplaceAll(c.CommandPath(), " ", "-")+".1"] = e
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fixed, err := fixManPage(b)
		if err != nil {
			return fmt.Errorf("%s: %w", filepath.Base(p), err)
		}
		fixed = addExitStatus(fixed, exits[filepath.Base(p)])
		if err := os.WriteFile(p, fixed, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// markdownEscaper escapes what markdown reads inline as markup.
var markdownEscaper = strings.NewReplacer(`\`, `\\`, "`", "\\`", `*`, `\*`, `_`, `\_`, `<`, `\<`, `[`, `\[`, `&`, `\&`)

// literalHelp escapes the help texts of root and every command under it
// for markdown. cobra's doc package hands them to a markdown renderer,
// but they are written as plain text for --help: unescaped, DCGM_FI_*
// came out with FI in italics and sha256:<hex> lost its <hex> as an HTML
// tag. Only the tree built for the pages is changed.
func literalHelp(root *cobra.Command) {
	seen := map[*pflag.Flag]bool{}
	escapeFlag := func(f *pflag.Flag) {
		if !seen[f] {
			seen[f] = true
			f.Usage = markdownEscaper.Replace(f.Usage)
		}
	}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.Short = markdownEscaper.Replace(c.Short)
		c.Long = markdownEscaper.Replace(c.Long)
		c.Flags().VisitAll(escapeFlag)
		c.PersistentFlags().VisitAll(escapeFlag)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// fixManPage mends cobra's roff where cobra itself is at fault, so that
// mandoc -Tlint has nothing to say:
//
//   - cobra formats the .TH date as "Jan 2006" whatever GenManHeader says,
//     which is no date mandoc (or groff's an-ext) can parse; the page gets
//     the ISO date man-pages(7) asks for instead.
//   - cobra puts a tab before every flag's description, which lands in
//     filled text; each flag becomes the tag of a .TP paragraph instead, the
//     usual man(7) layout for an option list.
//
// A tab anywhere else came from a help text, and is an error here rather
// than something mended: the help text is the place to fix it.
func fixManPage(page []byte) ([]byte, error) {
	cobraDate := `"` + manDate.Format("Jan 2006") + `"`
	lines := strings.Split(string(page), "\n")
	th := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, ".TH ") })
	if th < 0 || !strings.Contains(lines[th], cobraDate) {
		return nil, fmt.Errorf("no .TH line dated %s", cobraDate)
	}
	lines[th] = strings.Replace(lines[th], cobraDate, `"`+manDate.Format(time.DateOnly)+`"`, 1)
	var out []string
	for i, l := range lines {
		if !strings.Contains(l, "\t") {
			out = append(out, l)
			continue
		}
		if !strings.HasPrefix(l, "\t") || i == 0 || !strings.HasPrefix(lines[i-1], `\fB-`) {
			return nil, fmt.Errorf("line %d: a tab that is not cobra's before a flag's description: %q", i+1, l)
		}
		tag := out[len(out)-1]
		out = out[:len(out)-1]
		if len(out) > 0 && out[len(out)-1] == ".PP" {
			out = out[:len(out)-1]
		}
		out = append(out, ".TP", tag, strings.TrimPrefix(l, "\t"))
	}
	return []byte(strings.Join(out, "\n")), nil
}

// addExitStatus adds an EXIT STATUS section, as man-pages(7) orders it,
// before SEE ALSO: cobra's doc package writes none.
func addExitStatus(page []byte, exit string) []byte {
	if exit == "" {
		return page
	}
	var sec strings.Builder
	sec.WriteString(".SH EXIT STATUS\n")
	for _, l := range strings.Split(exit, "\n") {
		code, what, _ := strings.Cut(strings.TrimSpace(l), "  ")
		if code == "" || strings.TrimLeft(code, "0123456789") != "" {
			// A line that goes on from the one above.
			sec.WriteString(strings.TrimSpace(l) + "\n")
			continue
		}
		sec.WriteString(".TP\n\\fB" + code + "\\fR\n" + strings.TrimSpace(what) + "\n")
	}
	s := string(page)
	if i := strings.Index(s, ".SH SEE ALSO"); i >= 0 {
		return []byte(s[:i] + sec.String() + "\n" + s[i:])
	}
	return []byte(s + "\n" + sec.String())
}

// TestManPages keeps docs/man equal to what cobra's doc package makes of
// the command tree; go test ./cmd/gpuhost -run TestManPages -update
// rewrites them.
func TestManPages(t *testing.T) {
	if !fullBuild {
		t.Skip("the man pages describe the full build; the lean one has fewer commands")
	}
	a := &app{stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}}
	root := a.rootCommand()
	root.DisableAutoGenTag = true
	dir := t.TempDir()
	if err := genManPages(root, dir); err != nil {
		t.Fatal(err)
	}
	got, _ := filepath.Glob(filepath.Join(dir, "*.1"))
	if *update {
		old, _ := filepath.Glob(filepath.Join(manDir, "*.1"))
		for _, f := range old {
			if err := os.Remove(f); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.MkdirAll(manDir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range got {
			b, _ := os.ReadFile(f)
			if err := os.WriteFile(filepath.Join(manDir, filepath.Base(f)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	want, _ := filepath.Glob(filepath.Join(manDir, "*.1"))
	names := func(files []string) []string {
		out := make([]string, len(files))
		for i, f := range files {
			out[i] = filepath.Base(f)
		}
		return out
	}
	if !slices.Equal(names(got), names(want)) {
		t.Fatalf("docs/man has %v, the command tree makes %v; run go test ./cmd/gpuhost -run TestManPages -update", names(want), names(got))
	}
	for _, f := range got {
		a, _ := os.ReadFile(f)
		b, _ := os.ReadFile(filepath.Join(manDir, filepath.Base(f)))
		if !bytes.Equal(a, b) {
			t.Errorf("docs/man/%s is stale; run go test ./cmd/gpuhost -run TestManPages -update", filepath.Base(f))
		}
	}
	if !slices.Contains(names(got), "gpuhost.1") {
		t.Error("no gpuhost(1), which the systemd units name")
	}
}

// TestManPagesLint holds every page in docs/man to mandoc's checker at its
// warning level: what it warns about (a date it cannot read, a tab in
// filled text) renders differently, or wrongly, from one man(1) to another.
func TestManPagesLint(t *testing.T) {
	mandoc := testutil.Tool(t, "mandoc", "mandoc")
	pages, _ := filepath.Glob(filepath.Join(manDir, "*.1"))
	if len(pages) == 0 {
		t.Fatalf("no pages in %s", manDir)
	}
	// One run over all pages, not -W warning,stop, so that a failure lists
	// everything there is to fix.
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(mandoc, append([]string{"-Tlint", "-W", "warning"}, pages...)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	if err != nil || stdout.Len() > 0 || stderr.Len() > 0 {
		t.Errorf("mandoc -Tlint -W warning: %v\n%s%s\nfix the help text, or fixManPage where cobra is at fault, then go test ./cmd/gpuhost -run TestManPages -update", err, stdout.String(), stderr.String())
	}
}
