package treedigest

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// tree makes a small rootfs-like tree and returns its directory.
func tree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range map[string]string{"etc/os-release": "ID=debian\n", "usr/bin/tool": "#!/bin/sh\n", "var/log/dpkg.log": "2025-01-01 install\n"} {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../usr/lib/os-release", filepath.Join(dir, "etc/alt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "usr/bin/tool"), filepath.Join(dir, "usr/bin/tool2")); err != nil {
		t.Fatal(err)
	}
	return dir
}

func digest(t *testing.T, dir string, o Options) string {
	t.Helper()
	d, err := Digest(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(d, Prefix) || len(d) != len(Prefix)+64 {
		t.Fatalf("digest %q", d)
	}
	return d
}

func TestDigestFollowsWhatTheTreeHolds(t *testing.T) {
	base := digest(t, tree(t), Options{})
	if again := digest(t, tree(t), Options{}); again != base {
		t.Fatalf("two equal trees: %s and %s", base, again)
	}
	for _, tc := range []struct {
		name   string
		change func(dir string) error
	}{
		{"contents", func(d string) error {
			return os.WriteFile(filepath.Join(d, "etc/os-release"), []byte("ID=ubuntu\n"), 0o644)
		}},
		{"mode", func(d string) error { return os.Chmod(filepath.Join(d, "usr/bin/tool"), 0o755) }},
		{"setuid", func(d string) error { return os.Chmod(filepath.Join(d, "usr/bin/tool"), os.ModeSetuid|0o644) }},
		{"symlink target", func(d string) error {
			p := filepath.Join(d, "etc/alt")
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.Symlink("/usr/lib/os-release", p)
		}},
		{"a new empty file", func(d string) error { return os.WriteFile(filepath.Join(d, "etc/new"), nil, 0o644) }},
		{"a new empty directory", func(d string) error { return os.Mkdir(filepath.Join(d, "srv"), 0o755) }},
		{"a hard link made a copy", func(d string) error {
			p := filepath.Join(d, "usr/bin/tool2")
			if err := os.Remove(p); err != nil {
				return err
			}
			return os.WriteFile(p, []byte("#!/bin/sh\n"), 0o644)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tree(t)
			if err := tc.change(dir); err != nil {
				t.Fatal(err)
			}
			if got := digest(t, dir, Options{}); got == base {
				t.Errorf("the digest did not change")
			}
		})
	}
	t.Run("owner", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("changing an owner needs root")
		}
		dir := tree(t)
		if err := os.Lchown(filepath.Join(dir, "etc/alt"), 0, 4); err != nil {
			t.Fatal(err)
		}
		if got := digest(t, dir, Options{}); got == base {
			t.Errorf("the digest did not change")
		}
	})
	t.Run("times do not count", func(t *testing.T) {
		dir := tree(t)
		old := time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC)
		if err := os.Chtimes(filepath.Join(dir, "etc/os-release"), old, old); err != nil {
			t.Fatal(err)
		}
		if got := digest(t, dir, Options{}); got != base {
			t.Errorf("a modification time changed the digest")
		}
	})
}

func TestExcludedEntriesStayListed(t *testing.T) {
	o := Options{Exclude: []string{"/var/log/*.log"}}
	a, b := tree(t), tree(t)
	if err := os.WriteFile(filepath.Join(b, "var/log/dpkg.log"), []byte("2025-02-02 install\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if digest(t, a, o) != digest(t, b, o) {
		t.Errorf("an excluded file's contents changed the digest")
	}
	if digest(t, a, Options{}) == digest(t, b, Options{}) {
		t.Errorf("without the exclusion the log's change went unseen")
	}
	var lines []string
	if err := Walk(a, o, func(l string) error { lines = append(lines, l); return nil }); err != nil {
		t.Fatal(err)
	}
	got := strings.Join(lines, "\n")
	for _, want := range []string{
		`"/var/log/dpkg.log" file excluded`,
		`"/etc/alt" symlink 0777 `,
		`"/usr/bin/tool2" file 0644 `,
		` link="/usr/bin/tool"`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the listing has no %q:\n%s", want, got)
		}
	}
	if !strings.HasPrefix(lines[0], `"/" dir `) {
		t.Errorf("the listing starts with %q, not the root", lines[0])
	}
	if err := os.Remove(filepath.Join(b, "var/log/dpkg.log")); err != nil {
		t.Fatal(err)
	}
	if digest(t, a, o) == digest(t, b, o) {
		t.Errorf("an excluded file that went away went unseen")
	}
}

func TestDigestOfAMissingTreeFails(t *testing.T) {
	if _, err := Digest(filepath.Join(t.TempDir(), "none"), Options{}); err == nil {
		t.Fatal("no error")
	}
}

// TestListingNamesOddPathsOnOneLine: a name may hold any byte but "/" and
// NUL, and whoever made the tree chose it. Each entry must still be one
// line of printable text whose path reads back exactly, so that no name
// can add entries to a listing or pass for another name.
func TestListingNamesOddPathsOnOneLine(t *testing.T) {
	dir := t.TempDir()
	names := []string{
		"new\nline",
		`new\nline`,
		"new\n\"forged\" file 0644 0:0 " + strings.Repeat("0", 64),
		"tab\there",
		"cr\rhere",
		"ctl\x01\x1b[31m\x7f",
		"not utf-8 \xff\xfe",
		"quote\" and space",
		"back\\slash",
		"\u202etxt.exe",
		"nbsp\u00a0and\u2028separator",
	}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	target := "tar\nget\xff\t\x01 \"x\""
	if err := os.Symlink(target, filepath.Join(dir, "link\nx")); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(filepath.Join(dir, "new\nline"), filepath.Join(dir, "zz\thard")); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"/": true, "/link\nx": true, "/zz\thard": true}
	for _, n := range names {
		want["/"+n] = true
	}
	got := map[string]string{}
	err := Walk(dir, Options{}, func(line string) error {
		for _, r := range line {
			if !strconv.IsPrint(r) || r == utf8.RuneError {
				t.Errorf("the line holds %q, which is not printable: %q", r, line)
			}
		}
		first, err := strconv.QuotedPrefix(line)
		if err != nil {
			t.Fatalf("the line does not start with a quoted path: %q", line)
		}
		p, err := strconv.Unquote(first)
		if err != nil {
			t.Fatal(err)
		}
		if _, dup := got[p]; dup {
			t.Errorf("%q is listed twice", p)
		}
		got[p] = line[len(first):]
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Errorf("%d entries listed, want %d: %q", len(got), len(want), got)
	}
	for p := range want {
		if _, ok := got[p]; !ok {
			t.Errorf("%q is not listed", p)
		}
	}
	// The target is quoted too, spaces and all: it is the fourth field,
	// and read as a quoted string it ends where its quoting does.
	rest := got["/link\nx"]
	if f := strings.SplitN(strings.TrimPrefix(rest, " "), " ", 4); len(f) != 4 || f[0] != "symlink" {
		t.Errorf("the symlink's line: %q", rest)
	} else if q, err := strconv.QuotedPrefix(f[3]); err != nil || q != f[3] {
		t.Errorf("the symlink's target is not one quoted field: %q", f[3])
	} else if back, _ := strconv.Unquote(q); back != target {
		t.Errorf("the symlink's target reads back as %q, want %q", back, target)
	}
	rest = got["/zz\thard"]
	if i := strings.Index(rest, " link="); i < 0 {
		t.Errorf("the hard link's line: %q", rest)
	} else if back, err := strconv.Unquote(rest[i+len(" link="):]); err != nil || back != "/new\nline" {
		t.Errorf("the hard link's first path reads back as %q (%v)", back, err)
	}
}

func TestErrorsQuoteTheirPaths(t *testing.T) {
	err := quoted(&fs.PathError{Op: "lstat", Path: "etc/a\nb\x1b[2J", Err: syscall.EACCES})
	if want := `lstat "etc/a\nb\x1b[2J": permission denied`; err.Error() != want {
		t.Errorf("%q, want %q", err, want)
	}
	if !errors.Is(err, fs.ErrPermission) {
		t.Error("the error no longer says what went wrong")
	}
	_, err = Digest(filepath.Join(t.TempDir(), "no\nne"), Options{})
	if err == nil || strings.ContainsAny(err.Error(), "\n\x00") || !strings.Contains(err.Error(), `no\nne`) {
		t.Errorf("a missing tree: %q", err)
	}
}
