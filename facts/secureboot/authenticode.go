package secureboot

import (
	"bytes"
	"cmp"
	"crypto"
	"crypto/x509/pkix"
	"debug/pe"
	"encoding/asn1"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/gpuhost/gpuhost/facts"
	"slices"
)

// What a PE image's Authenticode signature is read with: the certificate
// table (the security data directory, whose address is a file offset) holds
// WIN_CERTIFICATE entries, each eight-byte aligned; an entry of revision
// 2.0 and type PKCS_SIGNED_DATA holds a PKCS#7 SignedData whose content is
// an SpcIndirectDataContent, the digest of the image.
const (
	winCertRevision2 = 0x0200
	winCertTypePKCS7 = 0x0002
	winCertHeader    = 8
	// securityDir is the index of the certificate table's data directory.
	securityDir = 4
	// maxSignatures bounds the entries read from one table; signing
	// tools append one, and a re-signed image a few.
	maxSignatures = 16
)

var (
	oidSpcIndirectData = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 311, 2, 1, 4}
	oidSpcPEImageData  = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 311, 2, 1, 15}
)

// peImage is what the Authenticode digest needs of a PE image: where its
// checksum field and certificate table entry lie, the size of its headers,
// the file extents of its sections and its certificate table.
type peImage struct {
	data []byte
	// checksumOff is the offset of the optional header's CheckSum field;
	// certEntryOff that of the certificate table's data directory entry,
	// -1 when the optional header has too few directories to hold one.
	checksumOff, certEntryOff int64
	headers                   int64
	sections                  []extent
	certOff, certSize         int64
	// names are the section names, which tell a boot loader's kind.
	names []string
	// vendorCert is shim's .vendor_cert section, nil in other images.
	vendorCert []byte
}

type extent struct{ off, size int64 }

// parsePE reads the layout of the PE image in data; debug/pe parses the
// headers, and the offsets it does not give are derived from the same
// fields it checked.
func parsePE(data []byte) (*peImage, error) {
	// debug/pe also reads bare COFF objects; a boot loader or kernel
	// always has the DOS header, whose e_lfanew leads to the PE header.
	if len(data) < 0x40 || data[0] != 'M' || data[1] != 'Z' {
		return nil, errors.New("not a PE image: no MZ header")
	}
	f, err := pe.NewFile(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("not a PE image: %w", err)
	}
	defer f.Close()
	opt := int64(binary.LittleEndian.Uint32(data[0x3c:])) + 4 + 20
	img := &peImage{data: data, checksumOff: opt + 64, certEntryOff: -1}
	var dirs []pe.DataDirectory
	var dirStart int64
	switch h := f.OptionalHeader.(type) {
	case *pe.OptionalHeader32:
		img.headers, dirs, dirStart = int64(h.SizeOfHeaders), h.DataDirectory[:min(h.NumberOfRvaAndSizes, 16)], opt+96
	case *pe.OptionalHeader64:
		img.headers, dirs, dirStart = int64(h.SizeOfHeaders), h.DataDirectory[:min(h.NumberOfRvaAndSizes, 16)], opt+112
	default:
		return nil, errors.New("the PE image has no optional header")
	}
	size := int64(len(data))
	if img.headers < img.checksumOff+4 || img.headers > size {
		return nil, fmt.Errorf("SizeOfHeaders %d does not fit the image's %d bytes", img.headers, size)
	}
	if len(dirs) > securityDir {
		img.certEntryOff = dirStart + securityDir*8
		if img.certEntryOff+8 > img.headers {
			return nil, errors.New("the certificate table entry lies outside the headers")
		}
		img.certOff, img.certSize = int64(dirs[securityDir].VirtualAddress), int64(dirs[securityDir].Size)
	}
	if img.certSize > 0 && (img.certOff < img.headers || img.certOff > size || img.certSize > size-img.certOff) {
		return nil, fmt.Errorf("the certificate table at %d (%d bytes) lies outside the image's %d bytes", img.certOff, img.certSize, size)
	}
	for _, s := range f.Sections {
		img.names = append(img.names, s.Name)
		if s.Size == 0 {
			continue
		}
		off, n := int64(s.Offset), int64(s.Size)
		if off > size || n > size-off {
			return nil, fmt.Errorf("section %q at %d (%d bytes) lies outside the image's %d bytes", s.Name, off, n, size)
		}
		img.sections = append(img.sections, extent{off, n})
		if s.Name == vendorCertSection {
			img.vendorCert = data[off : off+n]
		}
	}
	slices.SortStableFunc(img.sections, func(a, b extent) int { return cmp.Compare(a.off, b.off) })
	return img, nil
}

// digest is the image's Authenticode digest under h, as UEFI firmware
// computes it (EDK2's DxeImageVerificationLib): the headers without the
// checksum and the certificate table entry, the sections in file order,
// then what follows them up to the certificate table.
func (img *peImage) digest(h crypto.Hash) ([]byte, error) {
	if !h.Available() {
		return nil, fmt.Errorf("digest %v is not available", h)
	}
	w := h.New()
	d := img.data
	w.Write(d[:img.checksumOff])
	if img.certEntryOff >= 0 {
		w.Write(d[img.checksumOff+4 : img.certEntryOff])
		w.Write(d[img.certEntryOff+8 : img.headers])
	} else {
		w.Write(d[img.checksumOff+4 : img.headers])
	}
	hashed := img.headers
	for _, s := range img.sections {
		w.Write(d[s.off : s.off+s.size])
		hashed += s.size
	}
	size := int64(len(d))
	switch {
	case hashed+img.certSize < size:
		w.Write(d[hashed : size-img.certSize])
	case hashed+img.certSize > size:
		return nil, fmt.Errorf("the sections (%d bytes after the headers) and the certificate table (%d bytes) are more than the image's %d bytes", hashed-img.headers, img.certSize, size)
	}
	return w.Sum(nil), nil
}

// certificates splits the certificate table into its WIN_CERTIFICATE
// entries. An entry of another revision or type is returned with an error
// of its own, as the file's signature list shows it.
func (img *peImage) certificates() ([]facts.Authenticode, [][]byte, error) {
	table := img.data[img.certOff : img.certOff+img.certSize]
	var sigs []facts.Authenticode
	var blobs [][]byte
	for len(table) > 0 {
		if len(sigs) >= maxSignatures {
			return nil, nil, fmt.Errorf("the certificate table holds more than %d entries", maxSignatures)
		}
		if len(table) < winCertHeader {
			return nil, nil, fmt.Errorf("a WIN_CERTIFICATE header cut short (%d bytes left in the table)", len(table))
		}
		n := int64(binary.LittleEndian.Uint32(table))
		rev, typ := binary.LittleEndian.Uint16(table[4:]), binary.LittleEndian.Uint16(table[6:])
		if n < winCertHeader || n > int64(len(table)) {
			return nil, nil, fmt.Errorf("a WIN_CERTIFICATE of %d bytes in a table with %d left", n, len(table))
		}
		if rev != winCertRevision2 || typ != winCertTypePKCS7 {
			sigs = append(sigs, facts.Authenticode{Error: fmt.Sprintf("WIN_CERTIFICATE revision 0x%04x type 0x%04x is not a revision 2.0 PKCS_SIGNED_DATA", rev, typ)})
			blobs = append(blobs, nil)
		} else {
			sigs = append(sigs, facts.Authenticode{})
			blobs = append(blobs, table[winCertHeader:n])
		}
		next := (n + 7) &^ 7
		if next >= int64(len(table)) {
			break
		}
		table = table[next:]
	}
	return sigs, blobs, nil
}

// spcIndirectData is the part of SpcIndirectDataContent read here: what
// the signature is over, and the digest.
type spcIndirectData struct {
	typ    asn1.ObjectIdentifier
	alg    pkix.AlgorithmIdentifier
	digest []byte
}

// parseSpcIndirectData reads an SpcIndirectDataContent from content, the
// body of its SEQUENCE (the bytes the signed digest covers).
func parseSpcIndirectData(content []byte) (spcIndirectData, error) {
	var attr struct {
		Type  asn1.ObjectIdentifier
		Value asn1.RawValue `asn1:"optional"`
	}
	rest, err := asn1.Unmarshal(content, &attr)
	if err != nil {
		return spcIndirectData{}, fmt.Errorf("SpcIndirectDataContent: %w", err)
	}
	var di struct {
		Algorithm pkix.AlgorithmIdentifier
		Digest    []byte
	}
	if _, err := asn1.Unmarshal(rest, &di); err != nil {
		return spcIndirectData{}, fmt.Errorf("SpcIndirectDataContent digest: %w", err)
	}
	return spcIndirectData{typ: attr.Type, alg: di.Algorithm, digest: di.Digest}, nil
}

// sections reports whether the image has a section called name.
func (img *peImage) hasSection(name string) bool { return slices.Contains(img.names, name) }
