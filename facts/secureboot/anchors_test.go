package secureboot

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io/fs"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

// pki makes certificates for the anchor tests: each a key of its own,
// signed by its parent (self-signed without one).
type pki struct {
	t   *testing.T
	dir string
	n   int64
}

type pkiCert struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// certFile and keyFile are PEM files sbsign and sbverify read.
	certFile, keyFile string
}

func (p *pki) make(cn string, ca bool, parent *pkiCert) *pkiCert {
	p.t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		p.t.Fatal(err)
	}
	p.n++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(p.n), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		BasicConstraintsValid: true, IsCA: ca,
		KeyUsage: x509.KeyUsageDigitalSignature,
	}
	if ca {
		tmpl.KeyUsage |= x509.KeyUsageCertSign
	}
	issuerCert, issuerKey := tmpl, key
	if parent != nil {
		issuerCert, issuerKey = parent.cert, parent.key
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, issuerCert, &key.PublicKey, issuerKey)
	if err != nil {
		p.t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		p.t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		p.t.Fatal(err)
	}
	base := filepath.Join(p.dir, fmt.Sprint(p.n))
	c := &pkiCert{cert: cert, key: key, certFile: base + ".crt", keyFile: base + ".key"}
	writeFile(p.t, c.certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	writeFile(p.t, c.keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}))
	return c
}

// sbsignWith signs in into out as signer, carrying the extra certificates
// as sbsign's --addcert does.
func sbsignWith(t *testing.T, signer *pkiCert, extra []*pkiCert, in, out string) {
	t.Helper()
	args := []string{"--key", signer.keyFile, "--cert", signer.certFile, "--output", out}
	if len(extra) > 0 {
		bundle := filepath.Join(t.TempDir(), "extra.pem")
		var b []byte
		for _, c := range extra {
			b = append(b, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: c.cert.Raw})...)
		}
		writeFile(t, bundle, b)
		args = append(args, "--addcert", bundle)
	}
	testutil.Run(t, time.Minute, testutil.Tool(t, "sbsign", "sbsigntool"), append(args, in)...)
}

// Whether a signature's chain reaches an anchor is judged as OpenSSL's
// chain builder judges it, with that anchor as its one trusted certificate
// and partial chains allowed, as shim's and the firmware's OpenSSL allow
// them: GRUB images signed by self-signed keys, by leaves of a CA with and
// without the intermediate carried, by a forger whose certificate names
// the real CA as issuer, and by a certificate a non-CA "issued". The one
// anchor here is the image's enrolled DKMS certificate, which shim holds
// what it loads to, as an offline scan counts it. sbverify is not the peer
// here: sbverify 0.9.4 accepts any signature that carries an intermediate,
// whichever --cert it is given (TestSbverifyAcceptsAnyIntermediate).
func TestAnchorsAgreeWithOpenSSL(t *testing.T) {
	p := &pki{t: t, dir: t.TempDir()}
	root := p.make("root CA", true, nil)
	inter := p.make("intermediate CA", true, root)
	leaf := p.make("leaf", false, inter)
	direct := p.make("direct leaf", false, root)
	self := p.make("self-signed", false, nil)
	forgerRoot := p.make("root CA", true, nil) // the real root's name, another key
	forged := p.make("forged leaf", false, forgerRoot)
	notCA := p.make("not a CA", false, nil)
	underNotCA := p.make("under a non-CA", false, notCA)
	unrelated := p.make("unrelated CA", true, nil)

	grub := grubImage(t, t.TempDir())
	cases := []struct {
		name   string
		signer *pkiCert
		extra  []*pkiCert
	}{
		{"self", self, nil},
		{"direct", direct, nil},
		{"leaf-with-intermediate", leaf, []*pkiCert{inter}},
		{"leaf-alone", leaf, nil},
		{"forged", forged, []*pkiCert{forgerRoot}},
		{"under-non-ca", underNotCA, []*pkiCert{notCA}},
	}
	anchors := []*pkiCert{root, inter, leaf, self, notCA, unrelated}
	disagree := 0
	for _, tc := range cases {
		signed := filepath.Join(t.TempDir(), "grubx64.efi")
		sbsignWith(t, tc.signer, tc.extra, grub, signed)
		carried := carriedCerts(t, signed)
		for _, anchor := range anchors {
			tree := t.TempDir()
			copyFile(t, signed, filepath.Join(tree, "boot/efi/EFI/debian/grubx64.efi"))
			copyFile(t, anchor.certFile, filepath.Join(tree, dkmsCert))
			sb := collectFacts(t, collecttest.NewEnv(t, tree, false))
			if len(sb.BootFiles) != 1 || len(sb.BootFiles[0].Signatures) != 1 {
				t.Fatalf("%s: %+v", tc.name, sb.BootFiles)
			}
			got := sb.BootFiles[0].Signatures[0].Anchor
			want := opensslChains(t, anchor.certFile, carried, tc.signer.certFile)
			if (got != "") != want {
				disagree++
				t.Errorf("%s held to %q: our anchor %q, openssl verify -partial_chain accepts: %v", tc.name, anchor.cert.Subject.CommonName, got, want)
			}
			if wantName := "mok: CN=" + anchor.cert.Subject.CommonName + " (" + dkmsCert + ")"; got != "" && got != wantName {
				t.Errorf("%s: anchor %q, want %q", tc.name, got, wantName)
			}
		}
	}
	t.Logf("%d cases × %d anchors, %d disagreements with openssl", len(cases), len(anchors), disagree)
}

// carriedCerts writes the certificates file's signature carries as PEM,
// detached with sbattach and listed by openssl pkcs7.
func carriedCerts(t *testing.T, file string) string {
	t.Helper()
	dir := t.TempDir()
	sig, out := filepath.Join(dir, "sig.p7"), filepath.Join(dir, "carried.pem")
	testutil.Run(t, time.Minute, testutil.Tool(t, "sbattach", "sbsigntool"), "--detach", sig, file)
	testutil.Run(t, time.Minute, testutil.Tool(t, "openssl", "openssl"), "pkcs7", "-inform", "DER", "-in", sig, "-print_certs", "-out", out)
	return out
}

// opensslChains is the peer: whether OpenSSL builds a chain from signer
// through the carried certificates to anchor, a partial chain allowed.
func opensslChains(t *testing.T, anchor, carried, signer string) bool {
	t.Helper()
	err := exec.Command(testutil.Tool(t, "openssl", "openssl"), "verify", "-partial_chain", "-CAfile", anchor, "-untrusted", carried, signer).Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatal(err)
	}
	return err == nil
}

// The peer's limit, pinned: sbverify accepts a signature that carries an
// intermediate with a certificate that issued nothing in its chain.
func TestSbverifyAcceptsAnyIntermediate(t *testing.T) {
	p := &pki{t: t, dir: t.TempDir()}
	root := p.make("root CA", true, nil)
	inter := p.make("intermediate CA", true, root)
	leaf := p.make("leaf", false, inter)
	unrelated := p.make("unrelated CA", true, nil)
	signed := filepath.Join(t.TempDir(), "grubx64.efi")
	sbsignWith(t, leaf, []*pkiCert{inter}, grubImage(t, t.TempDir()), signed)
	if !sbverify(t, unrelated.certFile, signed) {
		t.Skip("this sbverify holds a carried intermediate to --cert: it can be the chain's peer again")
	}
	if opensslChains(t, unrelated.certFile, carriedCerts(t, signed), leaf.certFile) {
		t.Error("openssl also chains the leaf to a CA that issued nothing in its chain")
	}
}

// Debian's real boot chain: shim reaches db through Microsoft's UEFI CA
// (both of its signatures), and GRUB, MokManager and the fallback reach
// shim's vendor certificate, Debian's Secure Boot CA, as sbverify agrees.
// The same GRUB beside a shim re-signed by a key of one's own reaches no
// anchor: a shim the firmware would refuse vouches for nothing.
func TestDebianBootChainAnchors(t *testing.T) {
	signedBoot := testutil.SignedBoot(t)
	shim := filepath.Join(signedBoot, "usr/lib/shim/shimx64.efi.signed")
	files := map[string]string{
		"boot/efi/EFI/BOOT/BOOTX64.EFI":   shim,
		"boot/efi/EFI/debian/shimx64.efi": shim,
		"boot/efi/EFI/debian/grubx64.efi": filepath.Join(signedBoot, "usr/lib/grub/x86_64-efi-signed/grubx64.efi.signed"),
		"boot/efi/EFI/debian/mmx64.efi":   filepath.Join(signedBoot, "usr/lib/shim/mmx64.efi.signed"),
		"boot/efi/EFI/debian/fbx64.efi":   filepath.Join(signedBoot, "usr/lib/shim/fbx64.efi.signed"),
	}
	tree := t.TempDir()
	for to, from := range files {
		copyFile(t, from, filepath.Join(tree, to))
	}
	sb := collectFacts(t, collecttest.NewEnv(t, tree, false))
	if len(sb.BootFiles) != len(files) {
		t.Fatalf("%+v", sb.BootFiles)
	}
	ms := writeDER(t, "microsoft-uefi-ca-2011")
	for _, bf := range sb.BootFiles {
		if bf.Error != "" || len(bf.Signatures) == 0 {
			t.Fatalf("%s: %+v", bf.Path, bf)
		}
		for _, s := range bf.Signatures {
			want := "shim: CN=Debian Secure Boot CA (vendor certificate of /boot/efi/EFI/BOOT/BOOTX64.EFI)"
			if bf.Role == facts.RoleShim {
				want = "db: CN=Microsoft Corporation UEFI CA 2011,O=Microsoft Corporation,L=Redmond,ST=Washington,C=US (built in)"
				if strings.Contains(s.Signer, "2023") {
					want = "db: CN=Microsoft UEFI CA 2023,O=Microsoft Corporation,C=US (built in)"
				}
			}
			if s.Anchor != want {
				t.Errorf("%s signed by %s: anchor %q, want %q", bf.Path, s.Signer, s.Anchor, want)
			}
		}
	}
	if !sbverify(t, ms, shim) {
		t.Error("sbverify does not accept shim with Microsoft's UEFI CA 2011")
	}

	// The vendor certificate, as sbverify takes it, verifies GRUB.
	vendor := filepath.Join(t.TempDir(), "vendor.pem")
	for _, a := range sb.BootAnchors {
		if a.Store == facts.StoreShim {
			data, err := os.ReadFile(shim)
			if err != nil {
				t.Fatal(err)
			}
			img, err := parsePE(data)
			if err != nil {
				t.Fatal(err)
			}
			keys, err := vendorCertificates(img.vendorCert, "shim")
			if err != nil || len(keys) != 1 {
				t.Fatalf("vendor certificates %v: %v", keys, err)
			}
			writeFile(t, vendor, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: keys[0].cert.Raw}))
			if sum := sha256.Sum256(keys[0].cert.Raw); a.SHA256 != hex.EncodeToString(sum[:]) {
				t.Errorf("anchor %+v is not shim's vendor certificate", a)
			}
			break
		}
	}
	if !sbverify(t, vendor, files["boot/efi/EFI/debian/grubx64.efi"]) {
		t.Error("sbverify does not accept GRUB with shim's vendor certificate")
	}

	// Re-signed by our own key, shim reaches no anchor, nor does GRUB.
	own := filepath.Join(t.TempDir(), "shim-own.efi")
	stripped := filepath.Join(t.TempDir(), "shim-unsigned.efi")
	copyFile(t, shim, stripped)
	// sbattach --remove strips one signature; shim carries two.
	for range 2 {
		testutil.Run(t, time.Minute, testutil.Tool(t, "sbattach", "sbsigntool"), "--remove", stripped)
	}
	key, cert := testKey(t, t.TempDir(), "attacker")
	sbsign(t, key, cert, stripped, own)
	decoy := t.TempDir()
	copyFile(t, own, filepath.Join(decoy, "boot/efi/EFI/BOOT/BOOTX64.EFI"))
	copyFile(t, files["boot/efi/EFI/debian/grubx64.efi"], filepath.Join(decoy, "boot/efi/EFI/BOOT/grubx64.efi"))
	sb = collectFacts(t, collecttest.NewEnv(t, decoy, false))
	for _, bf := range sb.BootFiles {
		if len(bf.Signatures) != 1 || !bf.Signatures[0].SignatureValid || !bf.Signatures[0].DigestMatches || bf.Signatures[0].Anchor != "" {
			t.Errorf("beside a re-signed shim, %s: %+v", bf.Path, bf.Signatures)
		}
	}
	for _, a := range sb.BootAnchors {
		if a.Store == facts.StoreShim {
			t.Errorf("a shim db does not accept vouches for %+v", a)
		}
	}
}

// writeDER writes the built-in anchor name as PEM for sbverify.
func writeDER(t *testing.T, name string) string {
	t.Helper()
	der, err := builtinAnchors.ReadFile("anchors/" + name + ".der")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), name+".pem")
	writeFile(t, p, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	return p
}

// The built-in anchors are the certificates anchors/README.md names, by
// their fingerprints there.
func TestBuiltinAnchorsAreMicrosofts(t *testing.T) {
	readme, err := os.ReadFile("anchors/README.md")
	if err != nil {
		t.Fatal(err)
	}
	names, err := fs.Glob(builtinAnchors, "anchors/*.der")
	if err != nil || len(names) != 3 {
		t.Fatalf("%v %v", names, err)
	}
	for _, k := range builtinDB() {
		if !strings.Contains(string(readme), "| "+k.fact.SHA256+" |") || !strings.Contains(k.fact.Subject, "Microsoft") || !k.cert.IsCA {
			t.Errorf("built-in anchor %+v is not in anchors/README.md", k.fact)
		}
	}
}

// A live host's db variable replaces the built-ins; one that cannot be
// parsed is named, and the built-ins stand in.
func TestLiveDBVariable(t *testing.T) {
	p := &pki{t: t, dir: t.TempDir()}
	ca := p.make("platform db", true, nil)
	list := signatureList(t, ca.cert.Raw)
	root := t.TempDir()
	db := "sys/firmware/efi/efivars/db-" + imageSecurityDB
	collecttest.WriteTree(t, root, map[string]any{db: string(append([]byte{7, 0, 0, 0}, list...))})
	keys := firmwareDB(collecttest.NewEnv(t, root, true).FS, true)
	if len(keys) != 1 || keys[0].fact.Subject != "CN=platform db" || keys[0].fact.Source != "db" || keys[0].fact.Store != facts.StoreDB {
		t.Fatalf("%+v", keys)
	}
	collecttest.WriteTree(t, root, map[string]any{db: "\x07\x00\x00\x00garbage"})
	keys = firmwareDB(collecttest.NewEnv(t, root, true).FS, true)
	if len(keys) != 4 || !strings.Contains(keys[0].fact.Error, "parsing") || keys[1].fact.Source != builtinSource {
		t.Fatalf("%+v", keys)
	}
}

// signatureList is der as the one entry of an EFI_SIGNATURE_LIST of X.509
// certificates, as db holds it.
func signatureList(t *testing.T, der []byte) []byte {
	t.Helper()
	guid, _ := hex.DecodeString("a159c0a5e494a74a87b5ab155c2bf072") // EFI_CERT_X509_GUID as EFI stores it
	size := 28 + 16 + len(der)
	b := append([]byte{}, guid...)
	b = append(b, le32(size)...)
	b = append(b, le32(0)...)
	b = append(b, le32(16+len(der))...)
	b = append(b, make([]byte, 16)...) // the owner
	b = append(b, der...)
	return b
}

func le32(n int) []byte { return []byte{byte(n), byte(n >> 8), byte(n >> 16), byte(n >> 24)} }
