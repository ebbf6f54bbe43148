package lock

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/manifest"
)

var (
	sumA = strings.Repeat("a", 64)
	sumB = strings.Repeat("b", 64)
)

const sample = `# a lock
gpuhost.lock/v1
template debian-12-gpu
mirror http://mirror.invalid/debian
package libc6=2.36-9+deb12u10 amd64 ` + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" + `
package adduser=3.134 all ` + "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb" + `

source /etc/apt/sources.list.d/debian.sources ` + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" + `
keyring /usr/share/keyrings/debian-archive-keyring.gpg ` + "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb" + `
package dpkg=1:1.21.22 amd64 ` + "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" + `
`

func TestParseAndMarshalRoundTrip(t *testing.T) {
	l, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	want := &Lock{
		Template: "debian-12-gpu",
		Mirror:   "http://mirror.invalid/debian",
		Sources:  []File{{"/etc/apt/sources.list.d/debian.sources", sumA}},
		Keyrings: []File{{"/usr/share/keyrings/debian-archive-keyring.gpg", sumB}},
		Packages: []Package{
			{Name: "adduser", Version: "3.134", Arch: "all", SHA256: sumB},
			{Name: "dpkg", Version: "1:1.21.22", Arch: "amd64", SHA256: sumA},
			{Name: "libc6", Version: "2.36-9+deb12u10", Arch: "amd64", SHA256: sumA},
		},
	}
	if !reflect.DeepEqual(l, want) {
		t.Fatalf("parsed\n%+v\nwant\n%+v", l, want)
	}
	out := l.Marshal()
	back, err := Parse(out)
	if err != nil {
		t.Fatalf("reparsing %s: %v", out, err)
	}
	if !reflect.DeepEqual(back, l) {
		t.Errorf("round trip changed the lock:\n%s", out)
	}
	if !bytes.Equal(back.Marshal(), out) {
		t.Errorf("Marshal is not canonical")
	}
	wantText := "gpuhost.lock/v1\ntemplate debian-12-gpu\nmirror http://mirror.invalid/debian\n" +
		"source /etc/apt/sources.list.d/debian.sources " + sumA + "\n" +
		"keyring /usr/share/keyrings/debian-archive-keyring.gpg " + sumB + "\n" +
		"package adduser=3.134 all " + sumB + "\n" +
		"package dpkg=1:1.21.22 amd64 " + sumA + "\n" +
		"package libc6=2.36-9+deb12u10 amd64 " + sumA + "\n"
	if _, body, _ := strings.Cut(string(out), "\ngpuhost.lock/v1\n"); "gpuhost.lock/v1\n"+body != wantText {
		t.Errorf("Marshal wrote\n%s\nwant\n%s", out, wantText)
	}
}

func TestParseRefusesBadLocks(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", "not a lock file"},
		{"comments only", "# nothing\n\n", "not a lock file"},
		{"other schema", "gpuhost.lock/v2\n", `line 1: the first record must be "gpuhost.lock/v1"`},
		{"unknown record", "gpuhost.lock/v1\npin foo 1\n", `line 2: unknown record "pin"`},
		{"tab", "gpuhost.lock/v1\npackage\ta=1 all " + sumA + "\n", "line 2: fields are separated by one space"},
		{"two spaces", "gpuhost.lock/v1\npackage a=1  all " + sumA + "\n", "line 2: fields are separated by one space"},
		{"fields", "gpuhost.lock/v1\npackage a=1 all\n", "line 2: package takes 3 fields, not 2"},
		{"no version", "gpuhost.lock/v1\npackage a all " + sumA + "\n", `line 2: package "a" is not name=version`},
		{"bad version", "gpuhost.lock/v1\npackage a=x$y all " + sumA + "\n", `line 2: package a: version "x$y" is not a Debian version`},
		{"bad hash", "gpuhost.lock/v1\npackage a=1 all " + strings.ToUpper(sumA) + "\n", "line 2: package a: sha256"},
		{"twice", "gpuhost.lock/v1\npackage a=1 all " + sumA + "\npackage a=2 all " + sumA + "\n", "line 3: package a (all) is listed twice (first on line 2)"},
		{"template twice", "gpuhost.lock/v1\ntemplate a\ntemplate b\n", "line 3: template is given twice"},
		{"relative path", "gpuhost.lock/v1\nsource etc/apt/sources.list " + sumA + "\n", "not a clean absolute path"},
		{"dotdot", "gpuhost.lock/v1\nkeyring /usr/share/../x " + sumA + "\n", "not a clean absolute path"},
		{"mirror", "gpuhost.lock/v1\nmirror ftp://x\n", `line 2: mirror "ftp://x" is not valid`},
		{"crlf", "gpuhost.lock/v1\r\ntemplate a\n", "line 1: fields are separated"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	_, err := Parse([]byte("gpuhost.lock/v1\npackage a all " + sumA + "\npackage b=1 all xyz\n"))
	if err == nil || !strings.Contains(err.Error(), "line 2:") || !strings.Contains(err.Error(), "line 3:") {
		t.Fatalf("err %v, want both lines named", err)
	}
}

func TestReadFileNamesTheFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "x.lock")
	if err := os.WriteFile(p, []byte("gpuhost.lock/v1\nbogus\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(p)
	if err == nil || !strings.Contains(err.Error(), `parsing lock file "`+p+`": line 2: unknown record "bogus"`) {
		t.Fatalf("err %v", err)
	}
}

func TestCheckNamesEveryDifference(t *testing.T) {
	l, err := Parse([]byte("gpuhost.lock/v1\npackage a=1 all " + sumA + "\npackage b=2 amd64 " + sumA + "\npackage c=3 amd64 " + sumA + "\npackage d=4 amd64 " + sumA + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	inv := []Package{
		{Name: "a", Version: "1", Arch: "all", SHA256: sumA},
		{Name: "b", Version: "2.1", Arch: "amd64", SHA256: sumA},
		{Name: "c", Version: "3", Arch: "amd64", SHA256: sumB},
		{Name: "e", Version: "5", Arch: "amd64"},
	}
	want := []string{
		"extra package e (amd64): installed at 5, not in the lock",
		"package b (amd64): installed at 2.1, the lock has 2",
		"package c=3 (amd64): the .deb's sha256 is " + sumB + ", the lock has " + sumA,
	}
	if got := l.Check(inv, false); !reflect.DeepEqual(got, want) {
		t.Errorf("part of the lock:\n%q\nwant\n%q", got, want)
	}
	want = []string{want[0], "missing package d=4 (amd64): in the lock, not installed", want[1], want[2]}
	if got := l.Check(inv, true); !reflect.DeepEqual(got, want) {
		t.Errorf("whole lock:\n%q\nwant\n%q", got, want)
	}
	if got := l.Check(inv[:1], false); len(got) != 0 {
		t.Errorf("a matching part: %q", got)
	}
}

func TestFromManifest(t *testing.T) {
	m := &manifest.Manifest{
		Build: manifest.BuildInfo{Template: "t", Snapshot: "20250101T000000Z"},
		Packages: []manifest.Package{
			{Package: facts.Package{Name: "libc6", Version: "2.36-9", Arch: "amd64"}, SHA256: sumA},
			{Package: facts.Package{Name: "adduser", Version: "3.134", Arch: "all", Held: true}, SHA256: sumB},
		},
		ConfigFiles: []manifest.ConfigFile{
			{Path: "/etc/apt/sources.list.d/cuda.list", SHA256: sumA},
			{Path: "/etc/apt/preferences.d/gpuhost-nvidia.pref", SHA256: sumB},
			{Path: "/usr/share/keyrings/cuda-archive-keyring.gpg", SHA256: sumA},
			{Path: "/etc/ssh/sshd_config", SHA256: sumB},
		},
	}
	l, err := FromManifest(m)
	if err != nil {
		t.Fatal(err)
	}
	want := &Lock{
		Template: "t", Snapshot: "20250101T000000Z",
		Sources:  []File{{"/etc/apt/preferences.d/gpuhost-nvidia.pref", sumB}, {"/etc/apt/sources.list.d/cuda.list", sumA}},
		Keyrings: []File{{"/usr/share/keyrings/cuda-archive-keyring.gpg", sumA}},
		Packages: []Package{{"adduser", "3.134", "all", sumB}, {"libc6", "2.36-9", "amd64", sumA}},
	}
	if !reflect.DeepEqual(l, want) {
		t.Errorf("lock\n%+v\nwant\n%+v", l, want)
	}

	m.Packages = append(m.Packages, manifest.Package{Package: facts.Package{Name: "x", Version: "1", Arch: "all"}}, manifest.Package{Package: facts.Package{Name: "y", Version: "2", Arch: "all"}})
	if _, err := FromManifest(m); err == nil || !strings.Contains(err.Error(), "no .deb sha256 for 2 packages (x=1, y=2)") {
		t.Errorf("err %v, want the packages without a digest named", err)
	}
}

func TestParseBounds(t *testing.T) {
	long := "gpuhost.lock/v1\ntemplate " + strings.Repeat("a", maxLine) + "\n"
	if _, err := Parse([]byte(long)); err == nil || !strings.Contains(err.Error(), "line 2: longer than 4096 bytes") {
		t.Errorf("a long record: %v", err)
	}
	big := append([]byte("gpuhost.lock/v1\n"), bytes.Repeat([]byte("#\n"), MaxSize/2)...)
	if _, err := Parse(big); err == nil || !strings.Contains(err.Error(), "larger than 8388608 bytes") {
		t.Errorf("a large file: %v", err)
	}
	var many strings.Builder
	many.WriteString("gpuhost.lock/v1\n")
	for range 30 {
		many.WriteString("bogus\n")
	}
	if _, err := Parse([]byte(many.String())); err == nil || strings.Count(err.Error(), "unknown record") != 20 || !strings.Contains(err.Error(), "too many problems") {
		t.Errorf("many problems: %v", err)
	}
}
