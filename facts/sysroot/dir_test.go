package sysroot

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

func names(entries []fs.DirEntry) string {
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return strings.Join(out, ",")
}

func TestDirWalksRelativeToItsParent(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"a/b", "c"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "a/b/f"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/", filepath.Join(dir, "a/up")); err != nil {
		t.Fatal(err)
	}
	fsys, closer, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	root, err := OpenDir(fsys, "/")
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	entries, err := root.ReadDir()
	if err != nil || names(entries) != "a,c" {
		t.Fatalf("root: %s, %v", names(entries), err)
	}
	infoA, _ := entries[0].Info()
	infoC, _ := entries[1].Info()
	a, err := root.OpenDir("a", infoA)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if got, err := a.ReadDir(); err != nil || names(got) != "b,up" || a.Name() != "/a" {
		t.Errorf("a: %s %s, %v", a.Name(), names(got), err)
	}
	// What was listed as c is not a: a swap since the listing is refused.
	if _, err := root.OpenDir("a", infoC); err == nil || !strings.Contains(err.Error(), "changed") {
		t.Errorf("a opened as c: %v", err)
	}
	for _, bad := range []string{"..", "a/b", ".", ""} {
		if _, err := root.OpenDir(bad, infoA); err == nil {
			t.Errorf("OpenDir(%q) accepted", bad)
		}
	}
	// A symlink put where a directory was listed leads nowhere else.
	if err := os.Rename(filepath.Join(dir, "c"), filepath.Join(dir, "c.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(dir, "c")); err != nil {
		t.Fatal(err)
	}
	if _, err := root.OpenDir("c", infoC); err == nil {
		t.Error("a symlink swapped in for a listed directory was followed")
	}
	if _, err := OpenDir(fsys, "/a/b/f"); err == nil {
		t.Error("a file opened as a directory")
	}
}

func TestDirOverAView(t *testing.T) {
	v := FromFS(fstest.MapFS{"etc/ssh/sshd_config": {}, "etc/hostname": {}}, "disk.qcow2")
	root, err := OpenDir(v, "/")
	if err != nil {
		t.Fatal(err)
	}
	entries, err := root.ReadDir()
	if err != nil || names(entries) != "etc" {
		t.Fatalf("root: %s, %v", names(entries), err)
	}
	info, _ := entries[0].Info()
	etc, err := root.OpenDir("etc", info)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := etc.ReadDir(); err != nil || names(got) != "hostname,ssh" || etc.Name() != "/etc" {
		t.Errorf("etc: %s %s, %v", etc.Name(), names(got), err)
	}
	if _, err := etc.OpenDir("hostname", info); err == nil {
		t.Error("a file opened as a directory")
	}
	if _, err := OpenDir(v, "/etc/hostname"); err == nil {
		t.Error("a file opened as a directory")
	}
}
