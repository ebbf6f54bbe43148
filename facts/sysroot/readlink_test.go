package sysroot

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReadlink(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "etc/systemd/system"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/null", filepath.Join(dir, "etc/systemd/system/foo.service")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "etc/plain"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	fsys, c, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rl, ok := fsys.(interface{ Readlink(string) (string, error) })
	if !ok {
		t.Fatal("rootFS has no Readlink")
	}
	got, err := rl.Readlink("/etc/systemd/system/foo.service")
	if err != nil || got != "/dev/null" {
		t.Fatalf("Readlink = %q, %v; want /dev/null", got, err)
	}
	if _, err := rl.Readlink("/etc/plain"); err == nil {
		t.Error("Readlink of a regular file succeeded")
	}
	if _, err := rl.Readlink("/etc/missing"); !IsNotExist(err) {
		t.Errorf("Readlink of a missing file: %v, want not-exist", err)
	}
}
