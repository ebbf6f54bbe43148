package secureboot

import (
	"bytes"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

const testRelease = "6.1.0-28-amd64"

// fakeModule writes n random bytes to file: a signature covers bytes, not
// ELF, so the module need not be one.
func fakeModule(t *testing.T, file string, n int) {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// compress replaces file with file+ext made by the named tool, as kbuild
// and DKMS compress a module after signing it.
func compress(t *testing.T, file, tool, pkg string, args ...string) {
	t.Helper()
	testutil.Run(t, time.Minute, testutil.Tool(t, tool, pkg), append(args, file)...)
}

// moduleTree is an image's tree with DKMS's certificate and, under
// updates/dkms, modules signed with its key (plain and compressed), one
// unsigned, one changed after signing and one signed by another key.
func moduleTree(t *testing.T) (dir, cert string) {
	t.Helper()
	dir = t.TempDir()
	keys := t.TempDir()
	key, cert := testKey(t, keys, "DKMS module signing key")
	otherKey, otherCert := testKey(t, keys, "someone else")
	mods := filepath.Join(dir, "lib/modules", testRelease, "updates/dkms")
	for _, name := range []string{"nvidia.ko", "nvidia-uvm.ko", "nvidia-drm.ko", "nvidia-modeset.ko", "tampered.ko"} {
		fakeModule(t, filepath.Join(mods, name), 200<<10)
		signModule(t, key, cert, filepath.Join(mods, name))
	}
	compress(t, filepath.Join(mods, "nvidia-uvm.ko"), "xz", "xz-utils", "--check=crc32", "--lzma2=dict=1MiB")
	compress(t, filepath.Join(mods, "nvidia-drm.ko"), "zstd", "zstd", "-q", "--rm")
	compress(t, filepath.Join(mods, "nvidia-modeset.ko"), "gzip", "gzip", "-n")
	tampered := filepath.Join(mods, "tampered.ko")
	data, err := os.ReadFile(tampered)
	if err != nil {
		t.Fatal(err)
	}
	data[100] ^= 0xff
	if err := os.WriteFile(tampered, data, 0o644); err != nil {
		t.Fatal(err)
	}
	fakeModule(t, filepath.Join(mods, "unsigned.ko"), 4096)
	fakeModule(t, filepath.Join(dir, "lib/modules", testRelease, "extra/other.ko"), 4096)
	signModule(t, otherKey, otherCert, filepath.Join(dir, "lib/modules", testRelease, "extra/other.ko"))
	// An in-tree module is the distribution's, signed by its kernel's key.
	fakeModule(t, filepath.Join(dir, "lib/modules", testRelease, "kernel/drivers/intree.ko"), 4096)
	copyFile(t, cert, filepath.Join(dir, "var/lib/dkms/mok.pub"))
	return dir, cert
}

func byName(ms []facts.KernelModule) map[string]facts.KernelModule {
	out := map[string]facts.KernelModule{}
	for _, m := range ms {
		out[m.Name] = m
	}
	return out
}

// The out-of-tree modules of an image are checked against its DKMS
// certificate, through xz, zstd and gzip, and agree with openssl cms.
func TestOfflineModulesAgreeWithOpenSSL(t *testing.T) {
	dir, cert := moduleTree(t)
	sb := collectFacts(t, collecttest.NewEnv(t, dir, false))
	if sb == nil || sb.ModulesError != "" {
		t.Fatalf("facts %+v", sb)
	}
	if len(sb.TrustedKeys) != 1 || sb.TrustedKeys[0].Source != dkmsCert || !sb.TrustedKeys[0].Enrolled || sb.TrustedKeys[0].Subject != "CN=DKMS module signing key" {
		t.Errorf("trusted keys %+v", sb.TrustedKeys)
	}
	serial := strings.TrimPrefix(strings.TrimSpace(testutil.Run(t, time.Minute, "openssl", "x509", "-in", cert, "-noout", "-serial")), "serial=")
	mods := byName(sb.Modules)
	if len(mods) != 7 {
		t.Fatalf("modules %+v, want the seven out-of-tree ones", sb.Modules)
	}
	for _, name := range []string{"nvidia", "nvidia_uvm", "nvidia_drm", "nvidia_modeset"} {
		m := mods[name]
		if !m.Signed || m.VerifiedBy != dkmsCert || m.Error != "" || m.Signer != "DKMS module signing key" || m.HashAlgorithm != "sha512" ||
			strings.ReplaceAll(m.KeyID, ":", "") != serial || m.Kernel != testRelease {
			t.Errorf("%s: %+v, want verified by %s with key %s", name, m, dkmsCert, serial)
		}
	}
	if m := mods["unsigned"]; m.Signed || m.VerifiedBy != "" || m.Error != "" {
		t.Errorf("unsigned: %+v", m)
	}
	if m := mods["tampered"]; !m.Signed || m.VerifiedBy != "" || !strings.Contains(m.Error, "does not verify with the certificate /var/lib/dkms/mok.pub") {
		t.Errorf("tampered: %+v", m)
	}
	if m := mods["other"]; !m.Signed || m.VerifiedBy != "" || m.Signer != "someone else" || !strings.Contains(m.Error, "none of the trusted keys") {
		t.Errorf("other: %+v", m)
	}
	// The peer: openssl cms over the same bytes with the same certificate.
	for _, name := range []string{"nvidia.ko", "tampered.ko"} {
		data, err := os.ReadFile(filepath.Join(dir, "lib/modules", testRelease, "updates/dkms", name))
		if err != nil {
			t.Fatal(err)
		}
		sig, err := parseModuleTrailer(data[max(0, len(data)-modTail):], int64(len(data)))
		if err != nil {
			t.Fatal(err)
		}
		m := mods[moduleName(name)]
		if got, peer := m.VerifiedBy != "", opensslVerifies(t, sig, data, cert); got != peer {
			t.Errorf("%s: we say verified=%v, openssl cms %v", name, got, peer)
		}
	}
}

// A DER certificate serves as well as PEM, as sign-file takes either.
func TestDKMSCertificateInDER(t *testing.T) {
	dir, cert := moduleTree(t)
	der := testutil.Run(t, time.Minute, "openssl", "x509", "-in", cert, "-outform", "DER")
	if err := os.WriteFile(filepath.Join(dir, "var/lib/dkms/mok.pub"), []byte(der), 0o644); err != nil {
		t.Fatal(err)
	}
	sb := collectFacts(t, collecttest.NewEnv(t, dir, false))
	if m := byName(sb.Modules)["nvidia"]; m.VerifiedBy != dkmsCert {
		t.Errorf("with a DER certificate: %+v", m)
	}
}

// The trailer is read as the kernel's mod_check_sig reads it.
func TestParseModuleTrailer(t *testing.T) {
	good := append(bytes.Repeat([]byte{1}, 100), bytes.Repeat([]byte{2}, 10)...)
	good = append(good, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 10)
	good = append(good, modSigMagic...)
	sig, err := parseModuleTrailer(good, int64(len(good)))
	if err != nil || sig.content != 100 || !bytes.Equal(sig.der, bytes.Repeat([]byte{2}, 10)) {
		t.Fatalf("good trailer: %+v, %v", sig, err)
	}
	for name, tc := range map[string]struct {
		edit func([]byte) []byte
		want string
	}{
		"no magic":    {func(b []byte) []byte { return b[:len(b)-1] }, "no appended module signature"},
		"x509 id":     {func(b []byte) []byte { b[len(b)-28-10] = 1; return b }, "not PKCS#7"},
		"algo set":    {func(b []byte) []byte { b[len(b)-28-12] = 4; return b }, "fields other than sig_len"},
		"sig too big": {func(b []byte) []byte { b[len(b)-28-1] = 200; return b }, "sig_len 200"},
		"sig zero":    {func(b []byte) []byte { b[len(b)-28-1] = 0; return b }, "sig_len 0"},
		"info short":  {func(b []byte) []byte { return b[len(b)-30:] }, "cut short"},
	} {
		b := tc.edit(append([]byte(nil), good...))
		if _, err := parseModuleTrailer(b, int64(len(b))); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

// The digests of a module streamed past in pieces of any size are those of
// the bytes its signature covers.
func TestStreamDigestsKeepTheTrailer(t *testing.T) {
	dir := t.TempDir()
	key, cert := testKey(t, dir, "k")
	file := filepath.Join(dir, "m.ko")
	for _, n := range []int{0, 1, modTail - 1, modTail, modTail + 1, 3 * modTail} {
		fakeModule(t, file, n)
		signModule(t, key, cert, file)
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, piece := range []int{1, 7, 4096, len(data)} {
			s := newStreamDigests(modTail, hashes...)
			for b := data; len(b) > 0; b = b[min(piece, len(b)):] {
				s.Write(b[:min(piece, len(b))])
			}
			sig, sums, err := s.finish()
			if err != nil || sig.content != int64(n) {
				t.Fatalf("%d bytes in pieces of %d: %+v, %v", n, piece, sig, err)
			}
			want := knownDigest{}
			for _, h := range hashes {
				w := h.New()
				w.Write(data[:n])
				want[h] = w.Sum(nil)
			}
			for h, d := range want {
				if !bytes.Equal(sums[h], d) {
					t.Fatalf("%d bytes in pieces of %d: %v digest differs", n, piece, h)
				}
			}
		}
	}
}

// The xz pre-check passes what xz writes (one block, many blocks,
// concatenated streams) within the bound, and refuses a dictionary over
// it, before the decoder would allocate it.
func TestXZDictionariesAgreeWithXZ(t *testing.T) {
	xzTool := testutil.Tool(t, "xz", "xz-utils")
	dir := t.TempDir()
	in := filepath.Join(dir, "module")
	fakeModule(t, in, 256<<10)
	run := func(args ...string) []byte {
		t.Helper()
		out := testutil.Run(t, time.Minute, xzTool, append([]string{"-c", "--check=crc32"}, append(args, in)...)...)
		return []byte(out)
	}
	oneMiB := run("--lzma2=dict=1MiB")
	blocks := run("--lzma2=dict=1MiB", "--block-size=65536", "-T2")
	big := run("--lzma2=dict=64MiB")
	for name, tc := range map[string]struct {
		data []byte
		max  int64
		ok   bool
	}{
		"one block":               {oneMiB, 1 << 20, true},
		"many blocks":             {blocks, 1 << 20, true},
		"concatenated and padded": {append(append(append([]byte(nil), oneMiB...), 0, 0, 0, 0), blocks...), 1 << 20, true},
		"dictionary over bound":   {big, 8 << 20, false},
		"dictionary within bound": {big, 64 << 20, true},
		"cut short":               {oneMiB[:len(oneMiB)-1], 1 << 20, false},
	} {
		err := checkXZDictionaries(tc.data, tc.max)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", name, err, tc.ok)
		}
	}
}
