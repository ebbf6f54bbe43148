// Package layout_test holds the house rules the layout depends on: the
// top-level folders are the architecture (docs/design.md), so a folder that
// imports one that imports it back, or an internal/ helper that reaches into
// the rest of the tree, is a defect this test names.
package layout_test

import (
	"bufio"
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/gpuhost/gpuhost/"

// imports lists, for every package of the module, the packages of the module
// its non-test files import. Tests may exercise a package through the layers
// above it, so only what ships is held to the layout.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...")
	cmd.Env = append(os.Environ(), "GOEXPERIMENT=jsonv2")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	graph := map[string][]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || !strings.HasPrefix(fields[0], module) {
			continue
		}
		pkg := strings.TrimPrefix(fields[0], module)
		graph[pkg] = nil
		for _, imp := range fields[1:] {
			if strings.HasPrefix(imp, module) {
				graph[pkg] = append(graph[pkg], strings.TrimPrefix(imp, module))
			}
		}
	}
	if len(graph) == 0 {
		t.Fatal("go list found no package of the module")
	}
	return graph
}

func top(pkg string) string { return strings.SplitN(pkg, "/", 2)[0] }

// TestNoCycleBetweenTopLevelFolders fails when a top-level folder imports,
// directly or through others, a folder that imports it back.
func TestNoCycleBetweenTopLevelFolders(t *testing.T) {
	// edge[a][b] is one import that makes folder a depend on folder b.
	edge := map[string]map[string]string{}
	for pkg, deps := range imports(t) {
		for _, dep := range deps {
			a, b := top(pkg), top(dep)
			if a == b {
				continue
			}
			if edge[a] == nil {
				edge[a] = map[string]string{}
			}
			if _, seen := edge[a][b]; !seen {
				edge[a][b] = pkg + " imports " + dep
			}
		}
	}
	// A depth-first walk from each folder; reaching the start again is a
	// cycle, reported with the imports that close it.
	folders := make([]string, 0, len(edge))
	for a := range edge {
		folders = append(folders, a)
	}
	slices.Sort(folders)
	reported := map[string]bool{}
	for _, start := range folders {
		var path []string
		seen := map[string]bool{}
		var walk func(a string) bool
		walk = func(a string) bool {
			next := make([]string, 0, len(edge[a]))
			for b := range edge[a] {
				next = append(next, b)
			}
			slices.Sort(next)
			for _, b := range next {
				path = append(path, edge[a][b])
				if b == start {
					return true
				}
				if !seen[b] {
					seen[b] = true
					if walk(b) {
						return true
					}
				}
				path = path[:len(path)-1]
			}
			return false
		}
		if walk(start) {
			key := strings.Join(sortedCopy(path), "|")
			if !reported[key] {
				reported[key] = true
				t.Errorf("top-level folder %s imports itself back:\n  %s", start, strings.Join(path, "\n  "))
			}
		}
	}
}

// TestInternalHoldsOnlyLeaves fails when a package under internal/ imports
// any of ours outside internal/: internal is for helpers below everything
// else, and one that reaches up makes a cycle waiting to happen.
func TestInternalHoldsOnlyLeaves(t *testing.T) {
	for pkg, deps := range imports(t) {
		if top(pkg) != "internal" {
			continue
		}
		for _, dep := range deps {
			if top(dep) != "internal" {
				t.Errorf("%s imports %s: internal/ keeps only leaves; move the package beside what it serves", pkg, dep)
			}
		}
	}
}

// maxFileLines is the most lines a hand-written Go file may have: past it a
// file holds more than one idea, and the next engineer reads all of them to
// change one.
const maxFileLines = 700

// TestNoFileOverTheLimit fails on a hand-written Go file, test or not, of
// more than maxFileLines lines. Generated files (their first lines say
// "Code generated ... DO NOT EDIT.") are what their generator makes them.
func TestNoFileOverTheLimit(t *testing.T) {
	generated := regexp.MustCompile(`(?m)^// Code generated .* DO NOT EDIT\.$`)
	err := filepath.WalkDir(".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != "." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bin" || d.Name() == "out" || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		head := data[:min(len(data), 1024)]
		if lines := bytes.Count(data, []byte("\n")); lines > maxFileLines && !generated.Match(head) {
			t.Errorf("%s: %d lines, more than %d: split it by what its parts are about", p, lines, maxFileLines)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func sortedCopy(s []string) []string {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}
