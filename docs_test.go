package layout_test

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// shellBlock is one ```sh block of a document.
type shellBlock struct {
	file  string
	line  int    // of the opening fence
	needs string // "root", "bake" or "" from a <!-- needs: X --> line just above
	text  string
}

var needsMarker = regexp.MustCompile(`^<!--\s*needs:\s*(\w+)\s*-->$`)

// shellBlocks reads the ```sh blocks of a Markdown file.
func shellBlocks(t *testing.T, file string) []shellBlock {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []shellBlock
	var cur *shellBlock
	prev := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		switch {
		case cur == nil && strings.TrimSpace(line) == "```sh":
			cur = &shellBlock{file: file, line: n}
			if m := needsMarker.FindStringSubmatch(strings.TrimSpace(prev)); m != nil {
				cur.needs = m[1]
			}
		case cur != nil && strings.TrimSpace(line) == "```":
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			cur.text += line + "\n"
		}
		prev = line
	}
	if cur != nil {
		t.Errorf("%s:%d: a ```sh block is never closed", file, cur.line)
	}
	return out
}

func docFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{"README.md"}, files...)
}

// repoPath matches a word that names a file of the repository: one that
// starts with a top-level folder.
var repoPath = regexp.MustCompile(`(?:^|[\s=("'])((?:agent|builder|cmd|containers|deploy|docs|engine|facts|images|internal|manifest|policies|policy|render|reports|scan|target|tools)/[A-Za-z0-9_./*-]+)`)

var (
	comment    = regexp.MustCompile(`(?m)(^|\s)#.*$`)
	writesPath = regexp.MustCompile(`(?:-o\s+|>\s*|#\s*writes\s+)(\S+)`)
)

// TestDocumentedFilesExist fails on a shell example, in any block, that
// names a file of the repository that is not there, and on a relative
// Markdown link that leads nowhere.
func TestDocumentedFilesExist(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)#\s]+)(?:#[^)]*)?\)`)
	for _, file := range docFiles(t) {
		for _, b := range shellBlocks(t, file) {
			// A file the block itself writes (-o PATH, > PATH, or a
			// comment saying "writes PATH") is no missing input.
			written := map[string]bool{}
			for _, m := range writesPath.FindAllStringSubmatch(b.text, -1) {
				written[strings.TrimRight(m[1], ".,;:")] = true
			}
			for _, m := range repoPath.FindAllStringSubmatch(comment.ReplaceAllString(b.text, ""), -1) {
				p := strings.TrimRight(m[1], ".,;:")
				if matches, _ := filepath.Glob(p); len(matches) == 0 && !written[p] {
					t.Errorf("%s:%d: the example names %s, which does not exist", file, b.line, p)
				}
			}
		}
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(string(data), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(file), target)); err != nil {
				t.Errorf("%s: the link to %s leads nowhere", file, target)
			}
		}
	}
}

// TestDocumentedCommandsRun runs every ```sh block of README.md and docs/
// that is not marked as needing root or a bake, as a reader would from the
// repository root with gpuhost on PATH, and fails on the first command that
// fails. The blocks run in a temporary tree whose entries link to the
// repository's, so that what they write under out/ stays in the test's own
// directory.
func TestDocumentedCommandsRun(t *testing.T) {
	if testing.Short() {
		t.Skip("builds gpuhost and runs the documented examples; make test runs this")
	}
	work := t.TempDir()
	bin := filepath.Join(work, "bin")
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "gpuhost"), "./cmd/gpuhost")
	build.Env = append(os.Environ(), "GOEXPERIMENT=jsonv2")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building gpuhost: %v\n%s", err, out)
	}
	root := filepath.Join(work, "repo")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() == "out" || e.Name() == "bin" || e.Name() == ".git" {
			continue
		}
		if err := os.Symlink(filepath.Join(wd, e.Name()), filepath.Join(root, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	ran := 0
	for _, file := range docFiles(t) {
		for _, b := range shellBlocks(t, file) {
			if b.needs != "" {
				continue
			}
			ran++
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", b.text)
			cmd.Dir = root
			cmd.Env = append(os.Environ(), "PATH="+bin+":"+os.Getenv("PATH"), "NO_COLOR=1")
			out, err := cmd.CombinedOutput()
			cancel()
			if err != nil {
				t.Errorf("%s:%d: the documented commands fail (%v):\n%s\n--- output:\n%s", file, b.line, err, b.text, out)
			}
		}
	}
	if ran == 0 {
		t.Fatal("no documented block ran: the test proves nothing")
	}
	t.Logf("%d documented blocks ran", ran)
}
