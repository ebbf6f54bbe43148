package tls

import (
	"crypto/tls"
	"encoding/asn1"
	"encoding/pem"
	"math/big"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

func TestSuiteTable(t *testing.T) {
	seen := map[string]bool{}
	for i, r := range suiteRows {
		if i > 0 && r.id <= suiteRows[i-1].id {
			t.Errorf("0x%04x %s out of code-point order", r.id, r.name)
		}
		if r.id == 0 || r.id == scsvRenegotiation || seen[r.name] || !strings.HasPrefix(r.name, "TLS_") {
			t.Errorf("0x%04x %s: a suite no server may choose, or named twice", r.id, r.name)
		}
		seen[r.name] = true
	}
	// Go names the suites it knows as the registry does.
	for _, s := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		if got := suiteOf(s.ID).name; got != s.Name {
			t.Errorf("0x%04x: the table says %s, Go %s", s.ID, got, s.Name)
		}
	}
}

// TestSuiteTableAgreesWithOpenSSL: every suite OpenSSL knows is in the
// table under its code point and IANA name.
func TestSuiteTableAgreesWithOpenSSL(t *testing.T) {
	openssl := testutil.Tool(t, "openssl", "openssl")
	out := testutil.Run(t, 30*time.Second, openssl, "ciphers", "-V", "-stdname", "ALL:COMPLEMENTOFALL:@SECLEVEL=0")
	n := 0
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		hi, lo, _ := strings.Cut(f[0], ",")
		a, err1 := strconv.ParseUint(strings.TrimPrefix(hi, "0x"), 16, 8)
		b, err2 := strconv.ParseUint(strings.TrimPrefix(lo, "0x"), 16, 8)
		if err1 != nil || err2 != nil {
			t.Fatalf("openssl line %q", line)
		}
		id := uint16(a)<<8 | uint16(b)
		if got := suiteOf(id).name; got != f[2] {
			t.Errorf("0x%04x: the table says %s, OpenSSL %s", id, got, f[2])
		}
		n++
	}
	if n < 100 {
		t.Fatalf("openssl listed %d suites:\n%s", n, out)
	}
}

// TestSuiteClasses takes one suite of each class apart.
func TestSuiteClasses(t *testing.T) {
	for _, tc := range []struct {
		id         uint16
		kex        string
		cipher     string
		mac        string
		fs, weak   bool
		flag, name string
	}{
		{0xc02f, "ECDHE_RSA", "AES_128_GCM", "AEAD", true, false, "aead", "ECDHE AEAD"},
		{0x009e, "DHE_RSA", "AES_128_GCM", "AEAD", true, false, "aead", "DHE AEAD"},
		{0x009c, "RSA", "AES_128_GCM", "AEAD", false, true, "aead", "static RSA"},
		{0xc011, "ECDHE_RSA", "RC4_128", "SHA1", true, true, "rc4", "RC4"},
		{0x000a, "RSA", "3DES_EDE_CBC", "SHA1", false, true, "triple_des", "3DES"},
		{0xc013, "ECDHE_RSA", "AES_128_CBC", "SHA1", true, true, "cbc", "CBC SHA-1"},
		{0x003c, "RSA", "AES_128_CBC", "SHA256", false, true, "cbc", "CBC SHA-256"},
		{0xc028, "ECDHE_RSA", "AES_256_CBC", "SHA384", true, true, "cbc", "CBC SHA-384"},
		{0x003b, "RSA", "NULL", "SHA256", false, true, "null", "NULL"},
		{0x00a6, "DH_anon", "AES_128_GCM", "AEAD", true, true, "anonymous", "anonymous"},
		{0x0014, "DHE_RSA_EXPORT", "DES40_CBC", "SHA1", true, true, "export", "export"},
		{0x0015, "DHE_RSA", "DES_CBC", "SHA1", true, true, "des", "single DES"},
		{0xc0ac, "ECDHE_ECDSA", "AES_128_CCM", "AEAD", true, false, "aead", "CCM without a hash in its name"},
		{0x1303, "", "CHACHA20_POLY1305", "AEAD", true, false, "aead", "TLS 1.3"},
		{0xc0b4, "", "NULL", "SHA256", true, true, "null", "TLS 1.3 integrity only"},
	} {
		s := suiteOf(tc.id)
		f := s.fact(versionTLS12)
		flags := map[string]bool{"aead": f.AEAD, "rc4": f.RC4, "triple_des": f.TripleDES, "cbc": f.CBC, "null": f.Null,
			"anonymous": f.Anonymous, "export": f.Export, "des": f.DES}
		if s.kex != tc.kex || s.cipher != tc.cipher || s.mac != tc.mac || s.forwardSecret != tc.fs || s.weak() != tc.weak || !flags[tc.flag] {
			t.Errorf("%s: %s = %+v", tc.name, s.name, s)
		}
	}
	if s := suiteOf(0xfefe); s.name != "0xfefe" {
		t.Errorf("an unregistered code point: %+v", s)
	}
}

// TestFFDHEPrimes: each prime computed from RFC 7919's formula is a safe
// prime and the one OpenSSL uses.
func TestFFDHEPrimes(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	for group, g := range ffdheX {
		p := ffdhePrime(group)
		if p.BitLen() != g.bits || !p.ProbablyPrime(1) {
			t.Errorf("%s: %d bits, prime %v", groupName(group), p.BitLen(), p.ProbablyPrime(1))
		}
		q := new(big.Int).Rsh(p, 1)
		if !q.ProbablyPrime(1) {
			t.Errorf("%s: (p-1)/2 is not prime", groupName(group))
		}
		if err != nil {
			continue
		}
		out := testutil.Run(t, 30*time.Second, openssl, "genpkey", "-genparam", "-algorithm", "DH", "-pkeyopt", "group:"+groupName(group))
		block, _ := pem.Decode([]byte(out))
		var params struct{ P, G *big.Int }
		if block == nil {
			t.Fatalf("openssl printed no DH parameters:\n%s", out)
		}
		if _, err := asn1.Unmarshal(block.Bytes, &params); err != nil {
			t.Fatal(err)
		}
		if params.P.Cmp(p) != 0 || params.G.Int64() != 2 {
			t.Errorf("%s: not OpenSSL's prime", groupName(group))
		}
	}
}
