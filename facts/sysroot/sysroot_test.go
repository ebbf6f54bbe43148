package sysroot

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// hostile builds a tree with the tricks an untrusted image can play.
func hostile(t *testing.T) FS {
	t.Helper()
	dir := t.TempDir()
	mk := func(name, content string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	mk("etc/hostname", "inside\n")
	mk("run/app.pid", "42\n")
	mk("etc/nginx/sites-available/default", "server {}\n")
	link("/etc/nginx/sites-available/default", "etc/nginx/sites-enabled/default")
	link("/run", "var/run")
	link("/etc/hostname", "etc/abs-hostname")
	link("../../../../../../../../etc/hostname", "etc/climb")
	link("/etc/passwd", "etc/host-passwd") // absent inside the root
	link("loop-b", "etc/loop-a")
	link("loop-a", "etc/loop-b")
	if err := syscall.Mkfifo(filepath.Join(dir, "etc/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "var/sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(4 << 30); err != nil {
		t.Fatal(err)
	}
	f.Close()
	fsys, closer, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closer.Close() })
	return fsys
}

func TestLinksResolveInsideTheRoot(t *testing.T) {
	fsys := hostile(t)
	for name, want := range map[string]string{
		"/etc/nginx/sites-enabled/default": "server {}\n",
		"/var/run/app.pid":                 "42\n",
		"/etc/abs-hostname":                "inside\n",
		"/etc/climb":                       "inside\n",
		"../../etc/hostname":               "inside\n",
	} {
		got, err := fsys.ReadFile(name)
		if err != nil || string(got) != want {
			t.Errorf("ReadFile(%s) = %q, %v; want %q", name, got, err, want)
		}
	}
	// /etc/passwd exists on the host but not in the root: a link to it must
	// come back as absent, never as the host's file.
	if got, err := fsys.ReadFile("/etc/host-passwd"); !IsNotExist(err) {
		t.Errorf("link to the host's /etc/passwd: got %q, %v; want not-exist", got, err)
	}
	entries, err := fsys.ReadDir("/var/run")
	if err != nil || len(entries) != 1 || entries[0].Name() != "app.pid" {
		t.Errorf("ReadDir through an absolute link: %v, %v", entries, err)
	}
	if info, err := fsys.Lstat("/var/run"); err != nil || info.Mode()&os.ModeSymlink == 0 {
		t.Errorf("Lstat must not follow the final link: %v, %v", info, err)
	}
}

func TestHostileFilesAreClearErrors(t *testing.T) {
	fsys := hostile(t)
	cases := map[string]error{
		"/etc/loop-a": syscall.ELOOP,
		"/etc/fifo":   ErrNotRegular,
		"/var/sparse": ErrTooLarge,
		"/etc":        ErrNotRegular,
	}
	for name, want := range cases {
		_, err := fsys.ReadFile(name)
		if !errors.Is(err, want) {
			t.Errorf("ReadFile(%s): got %v, want %v", name, err, want)
			continue
		}
		if !strings.Contains(err.Error(), strings.TrimPrefix(name, "/")) {
			t.Errorf("ReadFile(%s): error %q does not name the file", name, err)
		}
	}
}

func TestGlobFollowsLinkedDirectories(t *testing.T) {
	fsys := hostile(t)
	got, err := fsys.Glob("/etc/nginx/sites-enabled/*")
	if err != nil || len(got) != 1 || got[0] != "etc/nginx/sites-enabled/default" {
		t.Fatalf("Glob = %v, %v", got, err)
	}
}

func TestReadAllLimit(t *testing.T) {
	data, err := ReadAllLimit(strings.NewReader("12345"), 5, "the stream")
	if err != nil || string(data) != "12345" {
		t.Errorf("five bytes within five: %q %v", data, err)
	}
	_, err = ReadAllLimit(strings.NewReader("123456"), 5, "the stream")
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "the stream") {
		t.Errorf("six bytes within five: %v, want a too-large error naming the stream", err)
	}
}
