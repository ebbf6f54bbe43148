package packages

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

func TestParseDpkgStatusErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
	}{
		{"no package", "Status: install ok installed\nVersion: 1\n", "line 1: paragraph has no Package"},
		{"no colon", "Package: a\nStatus: install ok installed\nVersion: 1\ngarbage line\n", "line 4: not a field"},
		{"orphan continuation", " continued\n", "line 1: continuation"},
		{"binary", "Package: a\n\x00\x00\n", "line 2: binary"},
		{"bad status", "Package: a\nStatus: installed\nVersion: 1\n", "line 1: package a: malformed Status"},
		{"no version", "Package: a\nStatus: install ok installed\n", "no Version"},
		{"repeated field", "Package: a\nPackage: b\n", "line 2: field Package repeated"},
		{"duplicate package", "Package: a\nStatus: install ok installed\nVersion: 1\nArchitecture: amd64\n\nPackage: a\nStatus: install ok installed\nVersion: 2\nArchitecture: amd64\n", "line 6: package a:amd64 already listed at line 1"},
		{"bad field name", "Package: a\n#comment: x\n", "line 2: invalid field name"},
		{"no status", "Package: a\nVersion: 1\n", "has no Status"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseDpkgStatus([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestParseDpkgStatusTooManyStanzas(t *testing.T) {
	var b strings.Builder
	for i := 0; i <= maxStanzas; i++ {
		b.WriteString("Package: p\nStatus: deinstall ok not-installed\n\n")
	}
	_, err := ParseDpkgStatus([]byte(b.String()))
	if err == nil || !strings.Contains(err.Error(), "more than 200000 paragraphs") {
		t.Errorf("err = %v", err)
	}
}

func TestParseDpkgStatusEdges(t *testing.T) {
	pkgs, err := ParseDpkgStatus(nil)
	if err != nil || pkgs == nil || len(pkgs) != 0 {
		t.Errorf("empty: %v %v, want an empty non-nil list", pkgs, err)
	}
	in := "\n\nPackage: zz\r\nStatus: hold ok installed\r\nVersion: 1:2.0-1\r\nArchitecture: all\r\n\r\n\n" +
		"Package: aa\nStatus: install ok installed\nVersion: 3\nArchitecture: arm64\nDescription: \xe9t\xe9 latin-1\n\tcontinued with tab\n"
	pkgs, err = ParseDpkgStatus([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []facts.Package{{Name: "aa", Version: "3", Arch: "arm64", Line: 9}, {Name: "zz", Version: "1:2.0-1", Arch: "all", Held: true, Line: 3}}
	if len(pkgs) != 2 || pkgs[0] != want[0] || pkgs[1] != want[1] {
		t.Errorf("got %+v, want %+v", pkgs, want)
	}
	if _, ok := Installed(pkgs, "nope"); ok {
		t.Error("Installed found a missing package")
	}
}

func TestManifest(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"schema":"gpuhost.manifest/v2"}`, "schema is"},
		{`{"schema":"gpuhost.manifest/v1"} {}`, "trailing"},
		{`[1]`, "cannot unmarshal"},
		{`null`, "not a JSON object"},
		{`{`, "unexpected EOF"},
	} {
		dir := t.TempDir()
		collecttest.WriteTree(t, dir, map[string]any{"etc/gpuhost/manifest.json": tc.in})
		_, err := CollectManifest(context.Background(), collecttest.NewEnv(t, dir, false))
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "manifest.json") {
			t.Errorf("%s: %v, want %q naming the file", tc.in, err, tc.want)
		}
	}
}

// TestDpkgInstalledWhateverTheSelection: a package dpkg has installed
// counts whatever its selection says (deinstall or purge only mark it for
// removal; its files are there), and hold marks it held; half-installed
// and config-files states are not installed.
func TestDpkgInstalledWhateverTheSelection(t *testing.T) {
	status := "Package: a\nStatus: install ok installed\nVersion: 1\nArchitecture: amd64\n\n" +
		"Package: b\nStatus: deinstall ok installed\nVersion: 2\nArchitecture: amd64\nSource: bsrc (2.1)\nMaintainer: M <m@example.org>\n\n" +
		"Package: c\nStatus: hold ok installed\nVersion: 3\nArchitecture: amd64\n\n" +
		"Package: d\nStatus: purge ok config-files\nVersion: 4\nArchitecture: amd64\n\n" +
		"Package: e\nStatus: install ok half-installed\nVersion: 5\nArchitecture: amd64\n"
	got, err := ParseDpkgInstalled([]byte(status))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range got {
		names = append(names, fmt.Sprintf("%s:%v", p.Name, p.Held))
	}
	if strings.Join(names, " ") != "a:false b:false c:true" {
		t.Errorf("installed %v; want a, b and c (held)", names)
	}
	if got[1].Source != "bsrc (2.1)" || got[1].Maintainer != "M <m@example.org>" || got[1].Line != 6 {
		t.Errorf("b: %+v", got[1])
	}
}

// ReadDpkgStatus, which vulnerability matching reads packages through too,
// tells a tree without dpkg from one whose database cannot be read.
func TestReadDpkgStatusAbsentOrBroken(t *testing.T) {
	_, err := ReadDpkgStatus(collecttest.OpenFS(t, t.TempDir()))
	if !errors.Is(err, ErrNoDpkg) {
		t.Errorf("no database: %v, want ErrNoDpkg", err)
	}
	dir := collecttest.TempTreeOf(t, map[string]any{"var/lib/dpkg/status": "Package: a\nno colon here\n"})
	_, err = ReadDpkgStatus(collecttest.OpenFS(t, dir))
	if err == nil || errors.Is(err, ErrNoDpkg) || !strings.Contains(err.Error(), "/var/lib/dpkg/status") {
		t.Errorf("broken database: %v, want a parse error naming the file", err)
	}
}
