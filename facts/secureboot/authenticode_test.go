package secureboot

import (
	"encoding/binary"
	"github.com/gpuhost/gpuhost/facts"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bootFile reads file as the collector reads a boot file.
func bootFile(t *testing.T, file string) facts.BootFile {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return checkBootFile(file, filepath.Base(file), data)
}

// verified is our verdict in sbverify's terms: a signature whose digest
// is the file's and whose signature verifies.
func verified(bf facts.BootFile) bool {
	for _, s := range bf.Signatures {
		if s.DigestMatches && s.SignatureValid {
			return true
		}
	}
	return false
}

// The Authenticode digest and signature of GRUB images that sbsign signed
// are judged as sbverify judges them: unsigned, signed, the checksum
// changed (outside the digest), a section changed after signing, and
// bytes appended after the certificate table.
func TestAuthenticodeAgreesWithSbverify(t *testing.T) {
	dir := t.TempDir()
	key, cert := testKey(t, dir, "gpuhost test db")
	unsigned := grubImage(t, dir)
	signed := filepath.Join(dir, "signed.efi")
	sbsign(t, key, cert, unsigned, signed)

	data, err := os.ReadFile(signed)
	if err != nil {
		t.Fatal(err)
	}
	img, err := parsePE(data)
	if err != nil {
		t.Fatal(err)
	}
	variant := func(name string, edit func([]byte) []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, edit(append([]byte(nil), data...)), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	checksum := variant("checksum.efi", func(b []byte) []byte {
		binary.LittleEndian.PutUint32(b[img.checksumOff:], 0xdeadbeef)
		return b
	})
	section := variant("section.efi", func(b []byte) []byte {
		b[img.sections[0].off+16] ^= 0xff
		return b
	})

	for _, tc := range []struct {
		file     string
		sigs     int
		match    bool
		verifies bool
	}{
		{unsigned, 0, false, false},
		{signed, 1, true, true},
		{checksum, 1, true, true},
		{section, 1, false, false},
	} {
		bf := bootFile(t, tc.file)
		if bf.Error != "" || bf.Role != facts.RoleGRUB || len(bf.Signatures) != tc.sigs {
			t.Fatalf("%s: %+v, want a GRUB image with %d signatures", filepath.Base(tc.file), bf, tc.sigs)
		}
		if got, peer := verified(bf), sbverify(t, cert, tc.file); got != tc.verifies || peer != tc.verifies {
			t.Errorf("%s: we say verified=%v, sbverify %v; want %v (%+v)", filepath.Base(tc.file), got, peer, tc.verifies, bf.Signatures)
		}
		if tc.sigs == 0 {
			continue
		}
		s := bf.Signatures[0]
		if s.DigestMatches != tc.match || !s.SignatureValid || s.Signer != "CN=gpuhost test db" || s.Issuer != "CN=gpuhost test db" || s.DigestAlgorithm != "sha256" {
			t.Errorf("%s: signature %+v", filepath.Base(tc.file), s)
		}
		if !tc.match && !strings.Contains(s.Error, "changed after signing") {
			t.Errorf("%s: error %q does not say the file changed", filepath.Base(tc.file), s.Error)
		}
	}
}

// A signature by another key still carries a valid signature and the
// file's digest; sbverify with our certificate refuses it, and the facts
// name the other signer, which is how a check tells whose it is.
func TestAuthenticodeNamesTheSigner(t *testing.T) {
	dir := t.TempDir()
	_, cert := testKey(t, dir, "gpuhost test db")
	otherKey, otherCert := testKey(t, dir, "someone else")
	signed := filepath.Join(dir, "other.efi")
	sbsign(t, otherKey, otherCert, grubImage(t, dir), signed)
	bf := bootFile(t, signed)
	if len(bf.Signatures) != 1 || bf.Signatures[0].Signer != "CN=someone else" || !verified(bf) {
		t.Fatalf("%+v", bf)
	}
	if sbverify(t, cert, signed) {
		t.Error("sbverify took another key's signature")
	}
}

// Damaged images are errors that say what is wrong, never signatures.
func TestAuthenticodeRefusesDamage(t *testing.T) {
	dir := t.TempDir()
	key, cert := testKey(t, dir, "db")
	signed := filepath.Join(dir, "signed.efi")
	sbsign(t, key, cert, grubImage(t, dir), signed)
	data, err := os.ReadFile(signed)
	if err != nil {
		t.Fatal(err)
	}
	img, err := parsePE(data)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		edit func([]byte) []byte
		want string
	}{
		"not PE": {func(b []byte) []byte { return []byte("#!/bin/sh\n") }, "not a PE image"},
		"table past the end": {func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[img.certEntryOff+4:], uint32(len(b)))
			return b
		}, "lies outside"},
		"cut short": {func(b []byte) []byte { return b[:img.certOff+4] }, "lies outside"},
		"bad entry length": {func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[img.certOff:], 3)
			return b
		}, "WIN_CERTIFICATE of 3 bytes"},
	} {
		bf := checkBootFile(name, "BOOTX64.EFI", tc.edit(append([]byte(nil), data...)))
		if !strings.Contains(bf.Error, tc.want) || len(bf.Signatures) != 0 {
			t.Errorf("%s: %+v, want an error with %q", name, bf, tc.want)
		}
	}
	other := append([]byte(nil), data...)
	binary.LittleEndian.PutUint16(other[img.certOff+6:], 1)
	bf := checkBootFile("x509 entry", "BOOTX64.EFI", other)
	if len(bf.Signatures) != 1 || !strings.Contains(bf.Signatures[0].Error, "not a revision 2.0 PKCS_SIGNED_DATA") || verified(bf) {
		t.Errorf("an X.509 WIN_CERTIFICATE: %+v", bf)
	}
}
