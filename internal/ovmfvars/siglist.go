package ovmfvars

import (
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"os"
)

// certX509 is EFI_CERT_X509_GUID: a signature list of DER certificates.
var certX509 = MustGUID("a5c059a1-94e4-4aa7-87b5-ab155c2bf072")

// X509SignatureLists encodes certificates as db and MokList hold them: one
// EFI_SIGNATURE_LIST of type EFI_CERT_X509_GUID per certificate (entries
// of a list share one size, and certificates differ in size), each entry
// owned by owner. The parser of these lists is facts/secureboot's, which
// reads MokListRT on a host; this is only the writer.
func X509SignatureLists(owner GUID, certs ...[]byte) ([]byte, error) {
	var out []byte
	le := binary.LittleEndian
	for i, der := range certs {
		if _, err := x509.ParseCertificate(der); err != nil {
			return nil, fmt.Errorf("certificate %d: %w", i, err)
		}
		entry := 16 + len(der)
		list := make([]byte, 28+entry)
		copy(list[0:], certX509[:])
		le.PutUint32(list[16:], uint32(len(list)))
		le.PutUint32(list[20:], 0)
		le.PutUint32(list[24:], uint32(entry))
		copy(list[28:], owner[:])
		copy(list[44:], der)
		out = append(out, list...)
	}
	return out, nil
}

// The variable shim reads the Machine Owner Keys from. Shim trusts it only
// with these attributes: one that the OS could also write at run time is
// deleted as forged.
const (
	MokListName       = "MokList"
	MokListAttributes = NonVolatile | BootService
)

// WithMokList copies the variable file src to dst with MokList set to the
// certificates (DER), as MokManager leaves it once an operator has
// confirmed their enrolment: shim then verifies with them, and hands them
// to the kernel as MokListRT, whose keyring the kernel checks module
// signatures against.
func WithMokList(src, dst string, certs ...[]byte) error {
	file, err := os.ReadFile(src)
	if err != nil {
		return fmt.Errorf("reading the UEFI variables: %w", err)
	}
	s, err := Parse(file)
	if err != nil {
		return fmt.Errorf("reading the UEFI variables %s: %w", src, err)
	}
	data, err := X509SignatureLists(ShimLock, certs...)
	if err != nil {
		return fmt.Errorf("the MOK list: %w", err)
	}
	if err := s.Set(MokListName, ShimLock, MokListAttributes, data); err != nil {
		return fmt.Errorf("in %s: %w", src, err)
	}
	return os.WriteFile(dst, s.Bytes(), 0o600)
}
