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

	"github.com/gpuhost/gpuhost/internal/testutil/testsign"
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

// TestUserInputErrorsNameTheFileAndFix: a file or flag value the operator
// got wrong is exit 2 with a message that names it and says what was
// wanted, in words rather than in the terms of the library that found it
// (a Go type, a bare EOF, a temporary file's name).
func TestUserInputErrorsNameTheFileAndFix(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	garbage := write("garbage.bin", "x\x00\x01 not json")
	empty := write("empty", "")
	array := write("array.json", "[1, 2]\n")
	cut := write("cut.json", `{"schema": "gpuhost.report/v1", "results": [`)
	facts, err := os.ReadFile("../../scan/testdata/compliant-host.json")
	if err != nil {
		t.Fatal(err)
	}
	factsFile := write("host-facts", string(facts))
	fifo := filepath.Join(dir, "pipe")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	rsaPriv, rsaPubPEM := testsign.RSAKeyPEM(t)
	rsaKey, rsaPub := write("rsa.pem", rsaPriv), write("rsa.pub", rsaPubPEM)
	ecKey, ecPub := testsign.ECDSAKeyFiles(t)
	waivers := waiverFile(t, [2]string{"GH-SSH-001", inDays(30)})
	if o := gpuhost(t, "", "waivers", "sign", waivers, "--signing-key", rsaKey); o.code != 0 {
		t.Fatalf("waivers sign: exit %d\n%s", o.code, o.stderr)
	}
	outDir := t.TempDir()

	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"diff of a file that is no JSON", []string{"report", "diff", garbage, factsFile}, []string{"report " + garbage + ": not JSON", "--format json"}},
		{"diff of an empty file", []string{"report", "diff", empty, factsFile}, []string{"report " + empty + ": the file is empty"}},
		{"diff of a JSON array", []string{"report", "diff", array, factsFile}, []string{"report " + array + ": a JSON array"}},
		{"diff of a cut report", []string{"report", "diff", cut, factsFile}, []string{"report " + cut + ": the JSON is cut short"}},
		{"diff of a FIFO", []string{"report", "diff", fifo, factsFile}, []string{fifo + " is a FIFO"}},
		{"baseline that is a JSON array", []string{"drift", "--rootfs", hardened, "--baseline", array}, []string{"baseline " + array + ": a JSON array", "gpuhost manifest"}},
		{"baseline that is facts", []string{"drift", "--rootfs", hardened, "--baseline", factsFile}, []string{"baseline " + factsFile + `: unknown field "target"`, "gpuhost.manifest/v1"}},
		{"facts file with no document", []string{"scan", "facts", empty}, []string{"no facts document in " + empty, "gpuhost.facts/v1"}},
		{"no workers", []string{"scan", "facts", factsFile, "--workers", "0"}, []string{`"--workers" flag: want a whole number, 1 or more`}},
		{"probes that time out at once", []string{"scan", "host", "--probe-timeout", "0s"}, []string{`"--probe-timeout" flag: want a duration above zero`}},
		{"no probes at once", []string{"facts", "host", "--probe-concurrency", "-1"}, []string{`"--probe-concurrency" flag: want a whole number, 1 or more`}},
		{"report into a directory", []string{"scan", "rootfs", hardened, "--report", "json=" + outDir}, []string{outDir + " is a directory; name a file"}},
		{"report into no directory", []string{"scan", "rootfs", hardened, "--report", "json=" + filepath.Join(outDir, "none", "r.json")}, []string{filepath.Join(outDir, "none") + " does not exist"}},
		{"bundle into a directory", []string{"policy", "bundle", "-o", outDir}, []string{outDir + " is a directory; name a file"}},
		{"coverage over 100%", []string{"policy", "test", "--fail-under", "101"}, []string{"--fail-under 101: want a percentage, 0 to 100"}},
		{"missing policy", []string{"scan", "rootfs", hardened, "--policy", filepath.Join(dir, "none")}, []string{"reading --policy", filepath.Join(dir, "none")}},
		{"empty signing key", []string{"policy", "bundle", "--signing-key", empty, "-o", filepath.Join(outDir, "p.tar.gz")}, []string{"--signing-key " + empty + ": the file is empty"}},
		{"public key to sign with", []string{"policy", "bundle", "--signing-key", rsaPub, "-o", filepath.Join(outDir, "p.tar.gz")}, []string{"--signing-key " + rsaPub + ": a public RSA key only verifies", "private key"}},
		{"HMAC secret without its algorithm", []string{"waivers", "sign", waivers, "--signing-key", garbage, "-o", filepath.Join(outDir, "w.sig")}, []string{"--signing-key " + garbage, "give --signing-alg HS256"}},
		{"EC key with RS256", []string{"waivers", "sign", waivers, "--signing-key", ecKey, "--signing-alg", "RS256", "-o", filepath.Join(outDir, "w.sig")}, []string{"--signing-key " + ecKey + ": an ECDSA P-256 key goes with ES256, not RS256", "leave out --signing-alg"}},
		{"EC public key with RS256", []string{"scan", "rootfs", hardened, "--verification-key", ecPub, "--verification-alg", "RS256"}, []string{"--verification-key " + ecPub, "leave out --verification-alg to use ES256"}},
		{"waivers signed with another kind of key", []string{"waivers", "check", waivers, "--waivers-key", ecPub}, []string{waivers + ".sig", "made with RS256, and the key given goes with ES256"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := gpuhostWithin(t, 30*time.Second, tc.args...)
			if o.code != 2 {
				t.Fatalf("exit %d, want 2\nstderr: %s", o.code, o.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(o.stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, o.stderr)
				}
			}
			for _, leak := range []string{"Go value", "Go struct", "json: cannot", "json: unknown", ".tmp", ": EOF"} {
				if strings.Contains(o.stderr, leak) {
					t.Errorf("stderr speaks the library's terms (%q):\n%s", leak, o.stderr)
				}
			}
		})
	}
}
