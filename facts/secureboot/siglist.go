package secureboot

import (
	"encoding/binary"
	"fmt"
)

// EFI_SIGNATURE_LIST (UEFI 2.10, 32.4.1) is how db, dbx, MokList and its
// runtime mirror MokListRT hold keys and hashes: lists one after another,
// each a type GUID, its size, a header of its own and equally sized
// EFI_SIGNATURE_DATA entries (an owner GUID, then the signature).
const (
	sigListHeader = 28
	sigOwnerSize  = 16
	// maxSigEntries bounds the entries read from one variable.
	maxSigEntries = 4096
	// certX509 is EFI_CERT_X509_GUID, an entry holding a DER certificate.
	certX509 = "a5c059a1-94e4-4aa7-87b5-ab155c2bf072"
)

// sigEntry is one EFI_SIGNATURE_DATA: the list's type and the entry's data
// after its owner.
type sigEntry struct {
	typ, owner string
	data       []byte
}

// efiGUID formats a GUID as EFI stores it: the first three fields little
// endian.
func efiGUID(b []byte) string {
	le := binary.LittleEndian
	return fmt.Sprintf("%08x-%04x-%04x-%x-%x", le.Uint32(b), le.Uint16(b[4:]), le.Uint16(b[6:]), b[8:10], b[10:16])
}

// parseSignatureLists reads the EFI_SIGNATURE_LISTs of a variable's data.
func parseSignatureLists(data []byte) ([]sigEntry, error) {
	var out []sigEntry
	for off := 0; off < len(data); {
		if len(data)-off < sigListHeader {
			return nil, fmt.Errorf("a signature list header cut short at byte %d", off)
		}
		h := data[off:]
		le := binary.LittleEndian
		listSize, hdrSize, sigSize := int64(le.Uint32(h[16:])), int64(le.Uint32(h[20:])), int64(le.Uint32(h[24:]))
		switch {
		case listSize < sigListHeader || listSize > int64(len(h)):
			return nil, fmt.Errorf("a signature list of %d bytes at byte %d, with %d left", listSize, off, len(h))
		case hdrSize > listSize-sigListHeader:
			return nil, fmt.Errorf("a signature header of %d bytes in a list of %d at byte %d", hdrSize, listSize, off)
		case sigSize < sigOwnerSize || (listSize-sigListHeader-hdrSize)%sigSize != 0:
			return nil, fmt.Errorf("signatures of %d bytes do not fill the list of %d at byte %d", sigSize, listSize, off)
		}
		typ := efiGUID(h)
		for e := sigListHeader + hdrSize; e < listSize; e += sigSize {
			if len(out) >= maxSigEntries {
				return nil, fmt.Errorf("more than %d signatures", maxSigEntries)
			}
			out = append(out, sigEntry{typ: typ, owner: efiGUID(h[e:]), data: h[e+sigOwnerSize : e+sigSize]})
		}
		off += int(listSize)
	}
	return out, nil
}
