package tls

import (
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// TestKeySizesAgreeWithOpenSSL makes certificates of the key types the
// checks size (issue 48: RSA-PSS and DSA keys had no size, so a 1024-bit
// one passed) with openssl, and holds the facts' type and size to what
// "openssl x509 -text" prints for the same certificate.
func TestKeySizesAgreeWithOpenSSL(t *testing.T) {
	openssl := testutil.Tool(t, "openssl", "openssl")
	dir := t.TempDir()
	publicKey := regexp.MustCompile(`Public-Key: \((\d+) bit\)`)
	for _, tc := range []struct {
		name    string
		keygen  []string
		keyType string
	}{
		{"rsa-pss-1024", []string{"-algorithm", "RSA-PSS", "-pkeyopt", "rsa_keygen_bits:1024"}, "RSA-PSS"},
		{"rsa-pss-3072", []string{"-algorithm", "RSA-PSS", "-pkeyopt", "rsa_keygen_bits:3072"}, "RSA-PSS"},
		{"rsa-1024", []string{"-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:1024"}, "RSA"},
		{"ec-p256", []string{"-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256"}, "EC"},
		{"ed448", []string{"-algorithm", "ED448"}, "Ed448"},
		{"dsa-1024", []string{"-paramfile", "dsa1024.param"}, "DSA"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key, crt := filepath.Join(dir, tc.name+".key"), filepath.Join(dir, tc.name+".crt")
			if tc.keyType == "DSA" {
				testutil.Run(t, time.Minute, openssl, "genpkey", "-genparam", "-algorithm", "DSA", "-pkeyopt", "dsa_paramgen_bits:1024", "-out", filepath.Join(dir, "dsa1024.param"))
				tc.keygen = []string{"-paramfile", filepath.Join(dir, "dsa1024.param")}
			}
			testutil.Run(t, time.Minute, openssl, append([]string{"genpkey", "-out", key}, tc.keygen...)...)
			testutil.Run(t, time.Minute, openssl, "req", "-x509", "-new", "-key", key, "-subj", "/CN="+tc.name, "-days", "30", "-out", crt)
			text := testutil.Run(t, time.Minute, openssl, "x509", "-in", crt, "-noout", "-text")
			var want int
			if m := publicKey.FindStringSubmatch(text); m != nil {
				want, _ = strconv.Atoi(m[1])
			} else if strings.Contains(text, "ED448 Public-Key:") {
				// openssl names Ed448 keys without a size; RFC 8032's is 448.
				want = 448
			} else {
				t.Fatalf("openssl prints no key size:\n%s", text)
			}
			data, err := os.ReadFile(crt)
			if err != nil {
				t.Fatal(err)
			}
			block, _ := pem.Decode(data)
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				t.Fatalf("parsing %s: %v", tc.name, err)
			}
			kind, bits := publicKeyFacts(c)
			if kind != tc.keyType || bits != want {
				t.Errorf("facts say %s %d bits; openssl says %d bits of %s", kind, bits, want, tc.keyType)
			}
		})
	}
}
