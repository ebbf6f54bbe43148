package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// gpuhostWithin runs the CLI like gpuhost, but fails the test when it has
// not returned within d: a path flag that blocks on a FIFO would otherwise
// hang the test binary.
func gpuhostWithin(t *testing.T, d time.Duration, args ...string) outcome {
	t.Helper()
	done := make(chan outcome, 1)
	go func() { done <- gpuhost(t, "", args...) }()
	select {
	case o := <-done:
		return o
	case <-time.After(d):
		t.Fatalf("gpuhost %s still running after %s", strings.Join(args, " "), d)
		return outcome{}
	}
}

// TestPathFlagsRefuseSpecialFiles: every file flag is opened without
// blocking and must be a regular file; a FIFO or a device is exit 2 naming
// it, at once.
func TestPathFlagsRefuseSpecialFiles(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		file string
	}{
		{"params FIFO", []string{"scan", "rootfs", hardened, "--params", fifo}, fifo},
		{"params device", []string{"scan", "rootfs", hardened, "--params", "/dev/zero"}, "/dev/zero"},
		{"waivers FIFO", []string{"scan", "rootfs", hardened, "--params", params, "--waivers", fifo}, fifo},
		{"policy FIFO", []string{"scan", "rootfs", hardened, "--policy", fifo}, fifo},
		{"extend-policy FIFO", []string{"scan", "rootfs", hardened, "--extend-policy", fifo}, fifo},
		{"verification-key FIFO", []string{"scan", "rootfs", hardened, "--extend-policy", "testdata/rootfs-weak", "--verification-key", fifo}, fifo},
		{"facts FIFO", []string{"scan", "facts", fifo}, fifo},
		{"waivers check FIFO", []string{"waivers", "check", fifo}, fifo},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := gpuhostWithin(t, 20*time.Second, tc.args...)
			if o.code != 2 {
				t.Fatalf("exit %d, want 2\nstderr: %s", o.code, o.stderr)
			}
			if !strings.Contains(o.stderr, tc.file) {
				t.Errorf("stderr does not name %s:\n%s", tc.file, o.stderr)
			}
		})
	}
}

// TestYAMLInputsAreBounded: a wrong file passed as YAML is refused without
// quoting it; nesting and alias expansion past the limits are refused
// before they are expanded.
func TestYAMLInputsAreBounded(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	passwd := write("passwd", "root:x:0:0:root:/root:/bin/bash\nsvc:x:999:999:secret-service:/srv:/usr/sbin/nologin\n")
	var laughs strings.Builder
	laughs.WriteString("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&laughs, "a%d: &a%d [*a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d, *a%[3]d]\n", i, i, i-1)
	}
	bomb := write("laughs.yaml", laughs.String())
	deep := write("deep.yaml", strings.Repeat("[", 1<<16)+strings.Repeat("]", 1<<16))
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"waivers /etc/passwd-like", []string{"scan", "rootfs", hardened, "--params", params, "--waivers", passwd}, passwd},
		{"params /etc/passwd-like", []string{"scan", "rootfs", hardened, "--params", passwd}, passwd},
		{"params billion laughs", []string{"scan", "rootfs", hardened, "--params", bomb}, "once aliases are expanded"},
		{"waivers billion laughs", []string{"scan", "rootfs", hardened, "--params", params, "--waivers", bomb}, "once aliases are expanded"},
		{"params nested 65536 deep", []string{"scan", "rootfs", hardened, "--params", deep}, "nested more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := gpuhostWithin(t, 30*time.Second, tc.args...)
			if o.code != 2 {
				t.Fatalf("exit %d, want 2\nstderr: %s", o.code, o.stderr)
			}
			if !strings.Contains(o.stderr, tc.want) {
				t.Errorf("stderr does not say %q:\n%s", tc.want, o.stderr)
			}
			for _, secret := range []string{"root:x", "/bin/bash", "secret-service", "nologin"} {
				if strings.Contains(o.stderr, secret) {
					t.Errorf("stderr quotes the file (%q):\n%s", secret, o.stderr)
				}
			}
		})
	}
}

// TestBundleBoundedInTotal: an unsigned bundle whose files are each under
// the per-file limit but decompress to more than the pack limit together
// is refused, before OPA reads it.
func TestBundleBoundedInTotal(t *testing.T) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	add := func(name string, data []byte) {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	add("p.rego", []byte("package x\n"))
	filler := bytes.Repeat([]byte(" "), 3<<20)
	for i := range 6 {
		add(fmt.Sprintf("d%d/data.json", i), append([]byte(`{"a":1}`), filler...))
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if buf.Len() > 1<<20 {
		t.Fatalf("the bundle is %d bytes compressed; the test wants a small file", buf.Len())
	}
	p := filepath.Join(t.TempDir(), "bomb.tar.gz")
	if err := os.WriteFile(p, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	o := gpuhostWithin(t, 30*time.Second, "scan", "rootfs", hardened, "--policy", p)
	if o.code != 2 || !strings.Contains(o.stderr, "decompress to more than") || !strings.Contains(o.stderr, p) {
		t.Fatalf("exit %d; want 2 naming the bundle and the limit\nstderr: %s", o.code, o.stderr)
	}
}
