package lock

import (
	"bytes"
	"fmt"
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
	out := mustEncode(t, l)
	back, err := Parse(out)
	if err != nil {
		t.Fatalf("reparsing %s: %v", out, err)
	}
	if !reflect.DeepEqual(back, l) {
		t.Errorf("round trip changed the lock:\n%s", out)
	}
	if !bytes.Equal(mustEncode(t, back), out) {
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
		{"unknown record", "gpuhost.lock/v1\npin foo 1\n", "line 2: unknown record; want template"},
		{"tab", "gpuhost.lock/v1\npackage\ta=1 all " + sumA + "\n", "line 2: fields are separated by one space"},
		{"two spaces", "gpuhost.lock/v1\npackage a=1  all " + sumA + "\n", "line 2: fields are separated by one space"},
		{"fields", "gpuhost.lock/v1\npackage a=1 all\n", "line 2: package takes 3 fields, not 2"},
		{"no version", "gpuhost.lock/v1\npackage ab all " + sumA + "\n", `line 2: package "ab" is not name=version`},
		{"bad version", "gpuhost.lock/v1\npackage ab=x$y all " + sumA + "\n", "line 2: package ab: version is not a Debian version"},
		{"bad hash", "gpuhost.lock/v1\npackage ab=1 all " + strings.ToUpper(sumA) + "\n", "line 2: package ab: sha256 is not 64 lower-case hex digits"},
		{"twice", "gpuhost.lock/v1\npackage ab=1 all " + sumA + "\npackage ab=2 all " + sumA + "\n", "line 3: package ab (all) is listed twice (first on line 2)"},
		{"one-letter name", "gpuhost.lock/v1\npackage a=1 all " + sumA + "\n", "line 2: the package name is not a Debian package name"},
		{"empty revision", "gpuhost.lock/v1\npackage ab=1.0- all " + sumA + "\n", "line 2: package ab: version is not a Debian version"},
		{"architecture", "gpuhost.lock/v1\npackage ab=1 AMD64 " + sumA + "\n", "line 2: package ab: architecture is not a Debian architecture"},
		{"control byte", "gpuhost.lock/v1\npackage ab=1\x1b[2J all " + sumA + "\n", "line 2: holds a control character or a byte outside printable ASCII"},
		{"not ASCII", "gpuhost.lock/v1\nsource /etc/apt/sources.list.d/\xff " + sumA + "\n", "line 2: holds a control character or a byte outside printable ASCII"},
		{"template twice", "gpuhost.lock/v1\ntemplate a\ntemplate b\n", "line 3: template is given twice"},
		{"relative path", "gpuhost.lock/v1\nsource etc/apt/sources.list " + sumA + "\n", "line 2: the source path is not a clean absolute path"},
		{"dotdot", "gpuhost.lock/v1\nkeyring /usr/share/../x " + sumA + "\n", "not a clean absolute path"},
		{"mirror", "gpuhost.lock/v1\nmirror ftp://x\n", "line 2: the mirror is not an http, https or file URL"},
		{"template", "gpuhost.lock/v1\ntemplate ../x\n", "line 2: the template is not a name"},
		{"snapshot", "gpuhost.lock/v1\nsnapshot 2025-01-01\n", "line 2: the snapshot is not a time"},
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
	if err == nil || !strings.Contains(err.Error(), `parsing lock file "`+p+`": line 2: unknown record; want`) {
		t.Fatalf("err %v", err)
	}
}

func TestCheckNamesEveryDifference(t *testing.T) {
	l, err := Parse([]byte("gpuhost.lock/v1\npackage acl=1 all " + sumA + "\npackage bash=2 amd64 " + sumA + "\npackage curl=3 amd64 " + sumA + "\npackage dash=4 amd64 " + sumA + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	inv := []Package{
		{Name: "acl", Version: "1", Arch: "all", SHA256: sumA},
		{Name: "bash", Version: "2.1", Arch: "amd64", SHA256: sumA},
		{Name: "curl", Version: "3", Arch: "amd64", SHA256: sumB},
		{Name: "expat", Version: "5", Arch: "amd64"},
	}
	want := []string{
		"extra package expat (amd64): installed at 5, not in the lock",
		"package bash (amd64): installed at 2.1, the lock has 2",
		"package curl=3 (amd64): the .deb's sha256 is " + sumB + ", the lock has " + sumA,
	}
	if got := l.Check(inv, false); !reflect.DeepEqual(got, want) {
		t.Errorf("part of the lock:\n%q\nwant\n%q", got, want)
	}
	want = []string{want[0], "missing package dash=4 (amd64): in the lock, not installed", want[1], want[2]}
	if got := l.Check(inv, true); !reflect.DeepEqual(got, want) {
		t.Errorf("whole lock:\n%q\nwant\n%q", got, want)
	}
	if got := l.Check(inv[:1], false); len(got) != 0 {
		t.Errorf("a matching part: %q", got)
	}
}

// TestCheckQuotesWhatBreaksTheRules: an inventory read from a tree the
// build does not control cannot add lines to the differences it reports.
func TestCheckQuotesWhatBreaksTheRules(t *testing.T) {
	l, err := Parse([]byte("gpuhost.lock/v1\npackage bash=2 amd64 " + sumA + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	inv := []Package{
		{Name: "evil\nmissing package bash=2 (amd64)", Version: "1", Arch: "amd64"},
		{Name: "bash", Version: "2\nextra package x", Arch: "amd64"},
		{Name: "bash", Version: "2", Arch: "amd64\r"},
	}
	got := l.Check(inv, false)
	want := []string{
		`extra package "evil\nmissing package bash=2 (amd64)" (amd64): installed at 1, not in the lock`,
		`extra package bash ("amd64\r"): installed at 2, not in the lock`,
		`package bash (amd64): installed at "2\nextra package x", the lock has 2`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%q\nwant\n%q", got, want)
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

	m.Packages = append(m.Packages, manifest.Package{Package: facts.Package{Name: "xz-utils", Version: "1", Arch: "all"}}, manifest.Package{Package: facts.Package{Name: "yq", Version: "2", Arch: "all"}})
	if _, err := FromManifest(m); err == nil || !strings.Contains(err.Error(), "no .deb sha256 for 2 packages (xz-utils=1, yq=2)") {
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

// evil is what an attacker who can write a manifest or a lock file puts in
// a field to add records of their own.
const evil = "\nmirror http://evil.invalid/debian\nsource /etc/apt/sources.list.d/evil.list " + "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc" + "\npackage evil=1 all " + "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc" + "\n"

// noEcho fails t when an error carries the attacker's bytes: a parser or
// writer says what was wrong and where, never what the field held.
func noEcho(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if strings.Contains(msg, "evil") || strings.Contains(msg, "EVIL") {
		t.Errorf("the error echoes its input: %q", msg)
	}
	for _, line := range strings.Split(msg, "\n") {
		if !printable(line) {
			t.Errorf("the error holds a byte that is not printable ASCII: %q", line)
		}
	}
}

func TestParseNeverEchoesTheLine(t *testing.T) {
	for _, tc := range []struct{ name, line, want string }{
		{"schema", "gpuhost.lock/v1EVIL", "line 1: the first record must be \"gpuhost.lock/v1\""},
		{"record", "EVIL a b", "line 2: unknown record"},
		{"template", "template EVIL/..", "line 2: the template is not a name"},
		{"mirror", "mirror http://EVIL\"", "line 2: the mirror is not"},
		{"snapshot", "snapshot EVIL", "line 2: the snapshot is not"},
		{"source path", "source /etc/apt/EVIL$x " + sumA, "line 2: the source path is not a clean absolute path"},
		{"keyring sum", "keyring /usr/share/keyrings/k.gpg EVIL", "line 2: keyring /usr/share/keyrings/k.gpg: sha256 is not 64"},
		{"name", "package EVIL=1 all " + sumA, "line 2: the package name is not a Debian package name"},
		{"version", "package ab=1EVIL$ all " + sumA, "line 2: package ab: version is not a Debian version"},
		{"arch", "package ab=1 EVIL " + sumA, "line 2: package ab: architecture is not"},
		{"sum", "package ab=1 all EVIL", "line 2: package ab: sha256 is not 64"},
		{"escape", "package ab=1\x1b]0;EVIL\x07 all " + sumA, "line 2: holds a control character"},
		{"fields", "package ab=1 all EVIL " + sumA, "line 2: package takes 3 fields, not 4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := "gpuhost.lock/v1\n" + tc.line + "\n"
			if tc.name == "schema" {
				in = tc.line + "\n"
			}
			_, err := Parse([]byte(in))
			noEcho(t, err)
			if err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %q, want %q", err, tc.want)
			}
		})
	}
}

func TestFieldRules(t *testing.T) {
	for _, tc := range []struct {
		s     string
		valid func(string) bool
		ok    bool
	}{
		{"ab", ValidName, true},
		{"a", ValidName, false},
		{"0ad", ValidName, true},
		{"g++-12", ValidName, true},
		{"lib.x+y-z", ValidName, true},
		{"-ab", ValidName, false},
		{"Ab", ValidName, false},
		{"ab\n", ValidName, false},
		{"a_b", ValidName, false},
		{"1", ValidVersion, true},
		{"0:1", ValidVersion, true},
		{"1:2.36-9+deb12u10", ValidVersion, true},
		{"2.0~rc1+dfsg-1.1~bpo12+1", ValidVersion, true},
		{"1.2-3-4", ValidVersion, true},
		{"2147483647:1", ValidVersion, true},
		{"2147483648:1", ValidVersion, false},
		{"99999999999999999999:1", ValidVersion, false},
		{"1.0-", ValidVersion, false},
		{"1:", ValidVersion, false},
		{":1", ValidVersion, false},
		{"1:2:3", ValidVersion, false},
		{"a1", ValidVersion, false},
		{"", ValidVersion, false},
		{" 1", ValidVersion, false},
		{"1 ", ValidVersion, false},
		{"1\n", ValidVersion, false},
		{"1\nmirror http://evil", ValidVersion, false},
		{"1_2", ValidVersion, false},
		{"1-2.3-", ValidVersion, false},
		{"amd64", ValidArch, true},
		{"linux-any", ValidArch, true},
		{"-any", ValidArch, false},
		{"AMD64", ValidArch, false},
		{"amd64\x00", ValidArch, false},
		{sumA, ValidSHA256, true},
		{sumA[1:], ValidSHA256, false},
		{sumA + "a", ValidSHA256, false},
		{strings.ToUpper(sumA), ValidSHA256, false},
		{sumA[1:] + "\n", ValidSHA256, false},
		{"/etc/apt/sources.list.d/cuda-debian12.list", ValidPath, true},
		{"/", ValidPath, true},
		{"/etc/apt/sources.list.d/a b.list", ValidPath, false},
		{"/etc/apt/sources.list.d/a\nb.list", ValidPath, false},
		{"/etc/apt/sources.list.d/a\\b.list", ValidPath, false},
		{"/etc/apt/sources.list.d/\xff.list", ValidPath, false},
		{"/etc/apt/sources.list.d/", ValidPath, false},
		{"/etc/apt/../x", ValidPath, false},
		{"etc/apt/sources.list", ValidPath, false},
	} {
		if got := tc.valid(tc.s); got != tc.ok {
			t.Errorf("%q: %v, want %v", tc.s, got, tc.ok)
		}
	}
}

// valid is a lock every field of which keeps to its rule.
func valid() *Lock {
	return &Lock{
		Template: "debian-12-gpu",
		Mirror:   "http://mirror.invalid/debian",
		Snapshot: "20250101T000000Z",
		Sources:  []File{{"/etc/apt/sources.list.d/debian.sources", sumA}},
		Keyrings: []File{{"/usr/share/keyrings/debian-archive-keyring.gpg", sumB}},
		Packages: []Package{{"adduser", "3.134", "all", sumB}, {"libc6", "2.36-9", "amd64", sumA}},
	}
}

func TestEncodeRefusesForgedRecords(t *testing.T) {
	if _, err := valid().Encode(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		change func(l *Lock)
		want   string
	}{
		{"template", func(l *Lock) { l.Template += evil }, "the template is not a name"},
		{"mirror", func(l *Lock) { l.Mirror += evil }, "the mirror is not an http"},
		{"snapshot", func(l *Lock) { l.Snapshot += evil }, "the snapshot is not a time"},
		{"source path", func(l *Lock) { l.Sources[0].Path += evil }, "source 1 of 1: the path is not a clean absolute path"},
		{"source sum", func(l *Lock) { l.Sources[0].SHA256 += evil }, "source /etc/apt/sources.list.d/debian.sources: sha256 is not 64"},
		{"keyring path", func(l *Lock) { l.Keyrings[0].Path += evil }, "keyring 1 of 1: the path is not"},
		{"keyring sum", func(l *Lock) { l.Keyrings[0].SHA256 = evil }, "keyring /usr/share/keyrings/debian-archive-keyring.gpg: sha256 is not 64"},
		{"name", func(l *Lock) { l.Packages[1].Name += evil }, "package 2 of 2: the name is not a Debian package name"},
		{"version", func(l *Lock) { l.Packages[1].Version += evil }, "package libc6: version is not a Debian version"},
		{"arch", func(l *Lock) { l.Packages[1].Arch += evil }, "package libc6: architecture is not"},
		{"sum", func(l *Lock) { l.Packages[1].SHA256 += evil }, "package libc6: sha256 is not 64"},
		{"space in a version", func(l *Lock) { l.Packages[1].Version = "1 amd64 " + sumA + " x" }, "package libc6: version is not"},
		{"a package twice", func(l *Lock) { l.Packages = append(l.Packages, l.Packages[0]) }, "package adduser (all) is listed twice"},
		{"a path twice", func(l *Lock) { l.Keyrings = append(l.Keyrings, l.Sources[0]) }, "/etc/apt/sources.list.d/debian.sources is listed twice"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := valid()
			tc.change(l)
			data, err := l.Encode()
			noEcho(t, err)
			if data != nil {
				t.Errorf("Encode wrote %q", data)
			}
			if err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %q, want %q", err, tc.want)
			}
			if _, err := l.Encode(); err == nil {
				t.Error("Encode wrote a lock Validate refuses")
			}
		})
	}
}

func TestEncodeBounds(t *testing.T) {
	// "package " + name + "=1 all " + sha256 is the name and 79 bytes.
	atLimit := &Lock{Packages: []Package{{strings.Repeat("a", maxLine-79), "1", "all", sumA}}}
	data, err := atLimit.Encode()
	if err != nil {
		t.Fatalf("a record of %d bytes: %v", maxLine, err)
	}
	if back, err := Parse(data); err != nil || !reflect.DeepEqual(back, atLimit) {
		t.Errorf("a record of %d bytes reads back as %v, %v", maxLine, back, err)
	}
	past := &Lock{Packages: []Package{{strings.Repeat("a", maxLine-78), "1", "all", sumA}}}
	if _, err := past.Encode(); err == nil || !strings.Contains(err.Error(), "the record is longer than 4096 bytes") {
		t.Errorf("a record of %d bytes: %v", maxLine+1, err)
	}
	// "source " + path + " " + sha256 is the path and 72 bytes; a keyring
	// record is one byte longer.
	path := "/" + strings.Repeat("k", maxLine-73)
	if _, err := (&Lock{Sources: []File{{path, sumA}}}).Encode(); err != nil {
		t.Errorf("a source record of %d bytes: %v", maxLine, err)
	}
	if _, err := (&Lock{Sources: []File{{path + "k", sumA}}}).Encode(); err == nil || !strings.Contains(err.Error(), "the record is longer than 4096 bytes") {
		t.Errorf("a source record of %d bytes: %v", maxLine+1, err)
	}
	if _, err := (&Lock{Keyrings: []File{{path[:len(path)-1], sumA}}}).Encode(); err != nil {
		t.Errorf("a keyring record of %d bytes: %v", maxLine, err)
	}
	if _, err := (&Lock{Keyrings: []File{{path, sumA}}}).Encode(); err == nil || !strings.Contains(err.Error(), "the record is longer than 4096 bytes") {
		t.Errorf("a keyring record of %d bytes: %v", maxLine+1, err)
	}
	var big Lock
	name := strings.Repeat("p", 3000)
	for size := 0; size <= MaxSize; size += len(name) + 6 + 79 {
		big.Packages = append(big.Packages, Package{fmt.Sprintf("%s%06d", name, len(big.Packages)), "1", "all", sumA})
	}
	if _, err := big.Encode(); err == nil || !strings.Contains(err.Error(), "the lock would be larger than 8388608 bytes") {
		t.Errorf("a lock past MaxSize: %v", err)
	}
	var many Lock
	for range 30 {
		many.Packages = append(many.Packages, Package{"x", "1", "all", sumA})
	}
	if err := many.Validate(); err == nil || strings.Count(err.Error(), "the name is not") != 20 || !strings.Contains(err.Error(), "too many problems") {
		t.Errorf("many problems: %v", err)
	}
}

func TestFromManifestRefusesForgedRecords(t *testing.T) {
	good := func() *manifest.Manifest {
		return &manifest.Manifest{
			Build: manifest.BuildInfo{Template: "debian-12-gpu", Mirror: "http://mirror.invalid/debian", Snapshot: "20250101T000000Z"},
			Packages: []manifest.Package{
				{Package: facts.Package{Name: "adduser", Version: "3.134", Arch: "all"}, SHA256: sumB},
				{Package: facts.Package{Name: "libc6", Version: "2.36-9", Arch: "amd64"}, SHA256: sumA},
			},
			ConfigFiles: []manifest.ConfigFile{
				{Path: "/etc/apt/sources.list.d/debian.sources", SHA256: sumA},
				{Path: "/usr/share/keyrings/debian-archive-keyring.gpg", SHA256: sumB},
				{Path: "/etc/ssh/sshd_config" + evil, SHA256: "not a lock's business"},
			},
		}
	}
	if _, err := FromManifest(good()); err != nil {
		t.Fatalf("a manifest whose other config files break the lock's rules: %v", err)
	}
	for _, tc := range []struct {
		name   string
		change func(m *manifest.Manifest)
		want   string
	}{
		{"template", func(m *manifest.Manifest) { m.Build.Template += evil }, "build.template: the template is not a name"},
		{"template path", func(m *manifest.Manifest) { m.Build.Template = "../../etc/cron.d/x" }, "build.template: the template is not a name"},
		{"mirror", func(m *manifest.Manifest) { m.Build.Mirror += evil }, "build.mirror: the mirror is not"},
		{"snapshot", func(m *manifest.Manifest) { m.Build.Snapshot += evil }, "build.snapshot: the snapshot is not"},
		{"name", func(m *manifest.Manifest) { m.Packages[1].Name += evil }, "packages[1]: the name is not a Debian package name"},
		{"version", func(m *manifest.Manifest) { m.Packages[1].Version += evil }, "package libc6 (packages[1]): version is not a Debian version"},
		{"version without a sha256", func(m *manifest.Manifest) { m.Packages[1].Version += evil; m.Packages[1].SHA256 = "" }, "package libc6 (packages[1]): version is not"},
		{"arch", func(m *manifest.Manifest) { m.Packages[1].Arch += evil }, "package libc6 (packages[1]): architecture is not"},
		{"sum", func(m *manifest.Manifest) { m.Packages[1].SHA256 += evil }, "package libc6 (packages[1]): sha256 is not 64"},
		{"a package twice", func(m *manifest.Manifest) { m.Packages = append(m.Packages, m.Packages[1]) }, "package libc6 (packages[2]): libc6 (amd64) is listed twice (first at packages[1])"},
		{"source path", func(m *manifest.Manifest) { m.ConfigFiles[0].Path += "\nmirror http:evil" }, "config_files[0]: the path of an apt source is not a clean absolute path"},
		{"source path with slashes", func(m *manifest.Manifest) { m.ConfigFiles[0].Path += "\nmirror http://evil\n" }, "config_files[0]: the path of an apt file is not a clean absolute path"},
		{"sources.list", func(m *manifest.Manifest) { m.ConfigFiles[0].Path = "/etc/apt/sources.list" + evil }, "config_files[0]: the path of an apt file is not"},
		{"source sum", func(m *manifest.Manifest) { m.ConfigFiles[0].SHA256 += evil }, "config_files[0] (/etc/apt/sources.list.d/debian.sources): sha256 is not 64"},
		{"keyring path", func(m *manifest.Manifest) { m.ConfigFiles[1].Path += "\rEVIL" }, "config_files[1]: the path of an apt keyring is not"},
		{"keyring path with slashes", func(m *manifest.Manifest) { m.ConfigFiles[1].Path += evil }, "config_files[1]: the path of an apt file is not"},
		{"keyring path with a space", func(m *manifest.Manifest) { m.ConfigFiles[1].Path = "/usr/share/keyrings/a b.gpg" }, "config_files[1]: the path of an apt keyring is not"},
		{"keyring sum", func(m *manifest.Manifest) { m.ConfigFiles[1].SHA256 = evil }, "config_files[1] (/usr/share/keyrings/debian-archive-keyring.gpg): sha256 is not 64"},
		{"a path twice", func(m *manifest.Manifest) { m.ConfigFiles = append(m.ConfigFiles, m.ConfigFiles[0]) }, "config_files[3]: /etc/apt/sources.list.d/debian.sources is listed twice (first at config_files[0])"},
		{"a record too long", func(m *manifest.Manifest) { m.Packages[1].Name = strings.Repeat("a", maxLine) }, "the manifest holds values a lock cannot: package " + strings.Repeat("a", maxLine) + " (amd64): the record is longer than 4096 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := good()
			tc.change(m)
			l, err := FromManifest(m)
			noEcho(t, err)
			if l != nil {
				t.Errorf("a lock came back: %+v", l)
			}
			if err != nil && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err %q, want %q", err, tc.want)
			}
		})
	}
	m := good()
	for range 30 {
		m.Packages = append(m.Packages, manifest.Package{Package: facts.Package{Name: "x", Version: "1", Arch: "all"}, SHA256: sumA})
	}
	if _, err := FromManifest(m); err == nil || strings.Count(err.Error(), "the name is not") != 20 || !strings.Contains(err.Error(), "too many problems") {
		t.Errorf("many problems: %v", err)
	}
}

// mustEncode is Encode for a lock the test holds valid.
func mustEncode(t testing.TB, l *Lock) []byte {
	t.Helper()
	b, err := l.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}
