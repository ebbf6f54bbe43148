package treedigest

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// listing walks dir with hook and returns its lines and error.
func listing(t *testing.T, dir string, o Options, hook func(p string)) (string, error) {
	t.Helper()
	var lines []string
	done := make(chan error, 1)
	go func() { done <- walkWith(dir, o, func(l string) error { lines = append(lines, l); return nil }, hook) }()
	select {
	case err := <-done:
		return strings.Join(lines, "\n"), err
	case <-time.After(30 * time.Second):
		t.Fatal("the walk hangs")
		return "", nil
	}
}

// A file swapped for a FIFO between its listing and its reading is
// refused at open, without waiting for a writer that never comes.
func TestFileSwappedForAFIFOIsRefused(t *testing.T) {
	dir := tree(t)
	target := filepath.Join(dir, "etc/os-release")
	_, err := listing(t, dir, Options{}, func(p string) {
		if p == "/etc/os-release" {
			if err := os.Remove(target); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(target, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	})
	if err == nil || !strings.Contains(err.Error(), `"/etc/os-release" changed while it was read`) {
		t.Fatalf("a file swapped for a FIFO: %v", err)
	}
}

// A parent swapped for a symlink to a directory outside the tree, after its
// listing, lends the walk nothing from outside: the entry is read beneath
// the root or the walk stops with an error, and its extended attributes are
// read through the directory the walk holds open.
func TestSwappedParentLeadsNowhere(t *testing.T) {
	dir := tree(t)
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "os-release"), []byte("ID=outside\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Setxattr(filepath.Join(outside, "os-release"), "user.planted", []byte("outside"), 0); err != nil {
		t.Fatalf("setting a user xattr on the test's own temp dir: %v", err)
	}
	clean, err := listing(t, dir, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := listing(t, dir, Options{}, func(p string) {
		if p == "/etc/os-release" {
			etc := filepath.Join(dir, "etc")
			if err := os.Rename(etc, etc+".old"); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(outside, etc); err != nil {
				t.Fatal(err)
			}
		}
	})
	if err == nil && got != clean {
		t.Errorf("the walk read something else than the tree it listed:\n%s", got)
	}
	if err != nil && !strings.Contains(err.Error(), "escapes") && !strings.Contains(err.Error(), "changed while it was read") {
		t.Errorf("the walk stopped for another reason: %v", err)
	}
	if strings.Contains(got, "xattrs=") {
		t.Errorf("the walk took the outside file's attributes:\n%s", got)
	}
}

// An exclusion names a regular file: a directory or a symlink at an
// excluded path is listed and walked like any other, so it hides nothing.
func TestExclusionNamesOnlyARegularFile(t *testing.T) {
	dir := tree(t)
	log := filepath.Join(dir, "var/log/dpkg.log")
	if err := os.Remove(log); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(log, "hidden"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(log, "hidden/payload"), []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	o := Options{Exclude: []string{"/var/log/dpkg.log"}}
	got, err := listing(t, dir, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(got, "excluded") || !strings.Contains(got, `"/var/log/dpkg.log/hidden/payload" file 0755`) {
		t.Errorf("a directory at an excluded path hid what is under it:\n%s", got)
	}
	before := digest(t, dir, o)
	if err := os.WriteFile(filepath.Join(log, "hidden/payload"), []byte("y"), 0o755); err != nil {
		t.Fatal(err)
	}
	if digest(t, dir, o) == before {
		t.Error("a change under a directory at an excluded path went unseen")
	}
}

// The contents hashed are bounded, the whole tree together, and so is the
// walk's time: at and past each bound.
func TestWalkBounds(t *testing.T) {
	dir := tree(t)
	var total int64
	if err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() {
			total += fi.Size()
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	// tool and tool2 are one file: it is read once.
	total -= int64(len("#!/bin/sh\n"))
	if _, err := listing(t, dir, Options{MaxBytes: total}, nil); err != nil {
		t.Errorf("at the byte bound: %v", err)
	}
	if _, err := listing(t, dir, Options{MaxBytes: total - 1}, nil); err == nil || !strings.Contains(err.Error(), "would pass the") {
		t.Errorf("past the byte bound: %v", err)
	}
	_, err := listing(t, dir, Options{Timeout: time.Nanosecond}, func(string) { time.Sleep(time.Millisecond) })
	if err == nil || !strings.Contains(err.Error(), "ran past its 1ns") {
		t.Errorf("past the time bound: %v", err)
	}
}

// A file that grows or shrinks while it is hashed is an error, not the
// digest of some of its bytes.
func TestFileChangedWhileReadIsRefused(t *testing.T) {
	dir := tree(t)
	target := filepath.Join(dir, "etc/os-release")
	_, err := listing(t, dir, Options{}, func(p string) {
		if p == "/etc/os-release" {
			if err := os.WriteFile(target, []byte("ID=debian\nVERSION_ID=12\n"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	})
	if err == nil || !strings.Contains(err.Error(), "grew while it was read") {
		t.Fatalf("a file that grew: %v", err)
	}
	if !errors.Is(err, err) {
		t.Fatal("unreachable")
	}
}

// An entry's extended attributes are part of its line, read for a file, a
// directory and the root alike, and a change to one changes the digest.
func TestXattrsAreHashed(t *testing.T) {
	dir := tree(t)
	before := digest(t, dir, Options{})
	for _, p := range []string{"", "etc", "etc/os-release"} {
		if err := unix.Setxattr(filepath.Join(dir, p), "user.gpuhost", []byte("1"), 0); err != nil {
			t.Fatalf("setting a user xattr on the test's own temp dir: %v", err)
		}
	}
	got, err := listing(t, dir, Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{`"/" dir`, `"/etc" dir`, `"/etc/os-release" file`} {
		found := false
		for _, line := range strings.Split(got, "\n") {
			if strings.HasPrefix(line, p) && strings.Contains(line, " xattrs=") {
				found = true
			}
		}
		if !found {
			t.Errorf("no xattrs on the line of %s:\n%s", p, got)
		}
	}
	if digest(t, dir, Options{}) == before {
		t.Error("extended attributes did not change the digest")
	}
}
