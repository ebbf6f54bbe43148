package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/reports"
)

// opensslKey is a key pair made by openssl as an operator makes one.
type opensslKey struct {
	name, priv, pub string
	alg             string // the key's own algorithm
	wrong           string // one it does not go with
}

// opensslKeys makes a key pair of each type OPA signs with: RSA, ECDSA
// P-256 as `openssl ecparam -genkey` writes it (the curve's parameters
// before the key), P-384 and Ed25519 as genpkey writes them.
func opensslKeys(t *testing.T) []opensslKey {
	t.Helper()
	openssl := testutil.Tool(t, "openssl", "openssl")
	dir := t.TempDir()
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(openssl, args...).CombinedOutput(); err != nil {
			t.Fatalf("openssl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	keys := []opensslKey{
		{name: "rsa", alg: "RS256", wrong: "ES256"},
		{name: "p256", alg: "ES256", wrong: "RS256"},
		{name: "p384", alg: "ES384", wrong: "ES256"},
		{name: "ed25519", alg: "EdDSA", wrong: "ES256"},
	}
	for i := range keys {
		k := &keys[i]
		k.priv, k.pub = filepath.Join(dir, k.name+".pem"), filepath.Join(dir, k.name+".pub")
		switch k.name {
		case "rsa":
			run("genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", k.priv)
		case "p256":
			run("ecparam", "-name", "prime256v1", "-genkey", "-out", k.priv)
		case "p384":
			run("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-384", "-out", k.priv)
		case "ed25519":
			run("genpkey", "-algorithm", "ED25519", "-out", k.priv)
		}
		run("pkey", "-in", k.priv, "-pubout", "-out", k.pub)
	}
	return keys
}

// TestSigningAlgorithmFollowsTheKey: `policy bundle` and `waivers sign`
// sign with the key's own algorithm, and a scan given only the public key
// verifies both the bundle and the waivers with it. An algorithm named
// that the key does not go with is exit 2, naming the key file and the
// flag to leave out.
func TestSigningAlgorithmFollowsTheKey(t *testing.T) {
	for _, k := range opensslKeys(t) {
		t.Run(k.name, func(t *testing.T) {
			dir := t.TempDir()
			pack := filepath.Join(dir, "pack.tar.gz")
			if o := gpuhost(t, "", "policy", "bundle", "--signing-key", k.priv, "-o", pack); o.code != 0 {
				t.Fatalf("policy bundle: exit %d\n%s", o.code, o.stderr)
			}
			file := waiverFile(t, [2]string{"GH-SSH-001", inDays(90)})
			if o := gpuhost(t, "", "waivers", "sign", file, "--signing-key", k.priv); o.code != 0 {
				t.Fatalf("waivers sign: exit %d\n%s", o.code, o.stderr)
			}

			o := gpuhost(t, "", "scan", "rootfs", weak, "--policy", pack, "--verification-key", k.pub, "--waivers", file, "--format", "json")
			if o.code != 1 {
				t.Fatalf("scan with the signed pack and waivers: exit %d, want 1\n%s", o.code, o.stderr)
			}
			if st := statuses(jsonReport(t, o)); st["GH-SSH-001"] != reports.StatusWaived {
				t.Errorf("GH-SSH-001 is %q, want waived by the signed file", st["GH-SSH-001"])
			}
			named := gpuhost(t, "", "waivers", "check", file, "--waivers-key", k.pub, "--waivers-alg", k.alg)
			if named.code != 0 || !strings.Contains(named.stdout, "verified with "+k.pub) {
				t.Errorf("waivers check with --waivers-alg %s: exit %d\n%s%s", k.alg, named.code, named.stdout, named.stderr)
			}

			for _, tc := range []struct {
				args        []string
				file, leave string
			}{
				{[]string{"policy", "bundle", "--signing-key", k.priv, "--signing-alg", k.wrong, "-o", filepath.Join(dir, "x.tar.gz")}, k.priv, "--signing-alg"},
				{[]string{"waivers", "sign", file, "--signing-key", k.priv, "--signing-alg", k.wrong, "-o", filepath.Join(dir, "x.sig")}, k.priv, "--signing-alg"},
				{[]string{"scan", "rootfs", weak, "--policy", pack, "--verification-key", k.pub, "--verification-alg", k.wrong}, k.pub, "--verification-alg"},
				{[]string{"waivers", "check", file, "--waivers-key", k.pub, "--waivers-alg", k.wrong}, k.pub, "--waivers-alg"},
			} {
				o := gpuhost(t, "", tc.args...)
				want := []string{tc.file, "not " + k.wrong, "leave out " + tc.leave + " to use " + k.alg}
				for _, w := range want {
					if o.code != 2 || !strings.Contains(o.stderr, w) {
						t.Errorf("%s %s with %s: exit %d, want 2 saying %q\n%s", tc.args[0], tc.args[1], k.wrong, o.code, w, o.stderr)
						break
					}
				}
			}
		})
	}
}
