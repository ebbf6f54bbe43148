package treedigest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
