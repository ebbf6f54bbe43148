package sysroot

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"
)

func link(target string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte(target), Mode: fs.ModeSymlink | 0o777}
}

func TestFromFS(t *testing.T) {
	m := fstest.MapFS{
		"etc/passwd":             {Data: []byte("image\n")},
		"etc/ssh/sshd_config":    {Data: []byte("PermitRootLogin no\n")},
		"etc/ssh/up":             link("../../../../../etc/passwd"),
		"abs":                    link("/etc/passwd"),
		"etclink":                link("/etc"),
		"loop1":                  link("loop2"),
		"loop2":                  link("loop1"),
		"big":                    {Data: make([]byte, 100)},
		"fifo":                   {Mode: fs.ModeNamedPipe},
		"var/run":                link("../run"),
		"run/sshd.pid":           {Data: []byte("1\n")},
		"etc/ssh/sshd_config.d/": {Mode: fs.ModeDir | 0o755},
	}
	v := FromFS(m, "disk.qcow2")
	for _, name := range []string{"/abs", "etc/ssh/up", "/etclink/passwd", "/etclink/../etc/passwd", "/../../etc/passwd"} {
		b, err := v.ReadFile(name)
		if err != nil || string(b) != "image\n" {
			t.Errorf("%s: %q, %v; want the tree's own /etc/passwd", name, b, err)
		}
	}
	if b, err := v.ReadFile("/var/run/sshd.pid"); err != nil || string(b) != "1\n" {
		t.Errorf("relative link: %q, %v", b, err)
	}
	if _, err := v.ReadFile("/loop1"); !errors.Is(err, syscall.ELOOP) {
		t.Errorf("loop: %v, want ELOOP", err)
	}
	if _, err := v.ReadFileLimit("/big", 99); !errors.Is(err, ErrTooLarge) {
		t.Errorf("big: %v, want ErrTooLarge", err)
	}
	if b, err := v.ReadFileLimit("/big", 100); err != nil || len(b) != 100 {
		t.Errorf("big at its size: %d bytes, %v", len(b), err)
	}
	if _, err := v.ReadFile("/fifo"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("fifo: %v, want ErrNotRegular", err)
	}
	if _, err := v.ReadFile("/etc/ssh"); !errors.Is(err, ErrNotRegular) {
		t.Errorf("directory: %v, want ErrNotRegular", err)
	}
	_, err := v.ReadFile("/etc/nope")
	if !IsNotExist(err) || !strings.Contains(err.Error(), "disk.qcow2:/etc/nope") {
		t.Errorf("missing: %v, want not-exist naming disk.qcow2:/etc/nope", err)
	}
	if _, err := v.ReadFile("/etc/passwd/x"); !IsNotExist(err) {
		t.Errorf("file as a directory: %v, want not-exist", err)
	}
	if info, err := v.Lstat("/abs"); err != nil || info.Mode()&fs.ModeSymlink == 0 {
		t.Errorf("Lstat /abs: %v, %v", info, err)
	}
	if info, err := v.Stat("/etclink"); err != nil || !info.IsDir() {
		t.Errorf("Stat /etclink: %v, %v", info, err)
	}
	if target, err := v.(interface{ Readlink(string) (string, error) }).Readlink("/abs"); err != nil || target != "/etc/passwd" {
		t.Errorf("Readlink: %q, %v", target, err)
	}
	entries, err := v.ReadDir("/etclink/ssh")
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if err != nil || strings.Join(names, ",") != "sshd_config,sshd_config.d,up" {
		t.Errorf("ReadDir: %v, %v", names, err)
	}
	if m, err := v.Glob("/etc/ssh/sshd_*"); err != nil || len(m) != 2 {
		t.Errorf("Glob: %v, %v", m, err)
	}
	if v.Root() != "disk.qcow2" || v.Display("etc//ssh/../passwd") != "/etc/passwd" || v.Display("/") != "/" {
		t.Errorf("Root %q, Display %q", v.Root(), v.Display("etc//ssh/../passwd"))
	}
}

func TestFromFSTooManyEntries(t *testing.T) {
	m := fstest.MapFS{}
	for i := range MaxDirEntries + 1 {
		m[fmt.Sprintf("d/f%d", i)] = &fstest.MapFile{}
	}
	if _, err := FromFS(m, "x").ReadDir("/d"); !errors.Is(err, ErrTooManyEntries) {
		t.Errorf("huge directory: %v, want ErrTooManyEntries", err)
	}
}
