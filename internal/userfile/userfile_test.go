package userfile

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, []byte("12345"), 0o600); err != nil {
		t.Fatal(err)
	}
	if data, err := Read(file, 5); err != nil || string(data) != "12345" {
		t.Fatalf("at the limit: %q, %v", data, err)
	}
	if _, err := Read(file, 4); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), file) || !strings.Contains(err.Error(), "4 bytes") {
		t.Fatalf("past the limit: %v; want ErrTooLarge naming the file and the limit", err)
	}
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{fifo: "is a FIFO", dir: "is a directory", "/dev/null": "is a character device"} {
		if _, err := Read(name, 10); err == nil || !strings.Contains(err.Error(), name+" "+want) {
			t.Errorf("Read(%s) = %v; want %q", name, err, want)
		}
	}
	if err := CheckDir(file); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("CheckDir(file) = %v", err)
	}
	if err := CheckDir(dir); err != nil {
		t.Errorf("CheckDir(dir) = %v", err)
	}
}
