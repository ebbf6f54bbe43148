package secureboot

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// minimalPE is the smallest EFI application there is: headers, one
// section of returns, no certificate table.
func minimalPE() []byte {
	b := make([]byte, 0x400)
	le := binary.LittleEndian
	copy(b, "MZ")
	le.PutUint32(b[0x3c:], 0x40)
	copy(b[0x40:], "PE\x00\x00")
	coff := b[0x44:]
	le.PutUint16(coff[0:], 0x8664) // x86-64
	le.PutUint16(coff[2:], 1)      // one section
	le.PutUint16(coff[16:], 240)   // PE32+ optional header with 16 directories
	le.PutUint16(coff[18:], 0x0206)
	opt := b[0x58:]
	le.PutUint16(opt[0:], 0x20b)
	le.PutUint32(opt[4:], 0x200)   // SizeOfCode
	le.PutUint32(opt[16:], 0x1000) // AddressOfEntryPoint
	le.PutUint32(opt[20:], 0x1000) // BaseOfCode
	le.PutUint32(opt[32:], 0x1000) // SectionAlignment
	le.PutUint32(opt[36:], 0x200)  // FileAlignment
	le.PutUint32(opt[56:], 0x2000) // SizeOfImage
	le.PutUint32(opt[60:], 0x200)  // SizeOfHeaders
	le.PutUint16(opt[68:], 10)     // EFI application
	le.PutUint32(opt[108:], 16)    // NumberOfRvaAndSizes
	sec := b[0x58+240:]
	copy(sec, ".text")
	le.PutUint32(sec[8:], 0x200)
	le.PutUint32(sec[12:], 0x1000)
	le.PutUint32(sec[16:], 0x200)
	le.PutUint32(sec[20:], 0x200)
	le.PutUint32(sec[36:], 0x60000020)
	for i := 0x200; i < 0x400; i++ {
		b[i] = 0xc3
	}
	return b
}

// TestMinimalPEIsOneSbsignSigns keeps the fuzz seed honest: sbsign signs
// it, sbverify verifies it, and so do we.
func TestMinimalPEIsOneSbsignSigns(t *testing.T) {
	dir := t.TempDir()
	key, cert := testKey(t, dir, "db")
	in, out := dir+"/min.efi", dir+"/min.signed.efi"
	writeFile(t, in, minimalPE())
	sbsign(t, key, cert, in, out)
	if bf := bootFile(t, out); !verified(bf) || !sbverify(t, cert, out) {
		t.Errorf("%+v", bf)
	}
}

// FuzzAuthenticode feeds hostile PE images through what reads a boot file:
// nothing panics, and a signature never claims a digest it did not match.
// The seed corpus holds the minimal image unsigned and signed by sbsign.
func FuzzAuthenticode(f *testing.F) {
	f.Add(minimalPE())
	f.Fuzz(func(t *testing.T, data []byte) {
		bf := checkBootFile("fuzz", "BOOTX64.EFI", data)
		if len(bf.Signatures) > maxSignatures {
			t.Fatalf("%d signatures", len(bf.Signatures))
		}
		for _, s := range bf.Signatures {
			if s.DigestMatches && s.DigestAlgorithm == "" {
				t.Fatalf("a matching digest of no algorithm: %+v", s)
			}
		}
	})
}

// FuzzModuleTrailer streams hostile modules through the digest and the
// trailer reader: nothing panics and a signature lies within the module.
func FuzzModuleTrailer(f *testing.F) {
	trailer := append(bytes.Repeat([]byte{0x30}, 8), 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 8)
	f.Add(append([]byte("\x7fELF module body"), append(trailer, modSigMagic...)...))
	f.Add([]byte(modSigMagic))
	f.Add(append(make([]byte, 12), modSigMagic...))
	f.Fuzz(func(t *testing.T, data []byte) {
		sig, sums, err := digestModule(bytes.NewReader(data))
		if err != nil {
			return
		}
		if sig.content < 0 || sig.content+int64(len(sig.der)) > int64(len(data)) || len(sums) != len(hashes) {
			t.Fatalf("signature %d bytes covering %d of %d", len(sig.der), sig.content, len(data))
		}
		if p7, err := parsePKCS7(sig.der); err == nil {
			signerName(p7)
		}
	})
}

// FuzzSignatureLists holds the EFI_SIGNATURE_LIST reader to entries that
// lie within the variable.
func FuzzSignatureLists(f *testing.F) {
	list := make([]byte, sigListHeader+sigOwnerSize+4)
	binary.LittleEndian.PutUint32(list[16:], uint32(len(list)))
	binary.LittleEndian.PutUint32(list[24:], sigOwnerSize+4)
	f.Add(list)
	f.Add(append(list, list...))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := parseSignatureLists(data)
		if err != nil {
			return
		}
		total := 0
		for _, e := range entries {
			total += len(e.data) + sigOwnerSize
		}
		if len(entries) > maxSigEntries || total > len(data) {
			t.Fatalf("%d entries of %d bytes from %d", len(entries), total, len(data))
		}
	})
}

// FuzzFAT holds what is checked before go-diskfs reads a partition to its
// bounds: a boot sector never yields a FAT past the bound or the
// partition, and no FAT makes the chain check loop.
func FuzzFAT(f *testing.F) {
	bs := make([]byte, 512)
	copy(bs[82:], "FAT32   ")
	bs[510], bs[511] = 0x55, 0xaa
	binary.LittleEndian.PutUint16(bs[11:], 512)
	bs[13] = 1
	binary.LittleEndian.PutUint16(bs[14:], 32)
	bs[16] = 2
	binary.LittleEndian.PutUint32(bs[36:], 1)
	binary.LittleEndian.PutUint32(bs[44:], 2)
	binary.LittleEndian.PutUint16(bs[48:], 1)
	fat := make([]byte, 64)
	binary.LittleEndian.PutUint32(fat[8:], 0x0fffffff)
	binary.LittleEndian.PutUint32(fat[12:], 4)
	binary.LittleEndian.PutUint32(fat[16:], 3)
	f.Add(bs, fat)
	f.Fuzz(func(t *testing.T, bs, fat []byte) {
		size := int64(1 << 20)
		if l, err := parseFAT32BootSector(bs, size); err == nil {
			if l.fatBytes > maxFATBytes || l.dataStart > size || l.bytesPerCluster <= 0 {
				t.Fatalf("layout %+v", l)
			}
		}
		_ = checkFATChains(fat, 8)
	})
}

// FuzzXZDictionaries holds the xz pre-check to never panic and to pass no
// stream that asks for a dictionary over the bound.
func FuzzXZDictionaries(f *testing.F) {
	// An empty stream as xz writes it, and one block's header before it.
	f.Add([]byte("\xfd7zXZ\x00\x00\x04\xe6\xd6\xb4F\x00\x00\x00\x00\x1c\xdfD!\x1f\xb6\xf3}\x01\x00\x00\x00\x00\x04YZ"))
	f.Add([]byte("\xfd7zXZ\x00\x00\x01i\"\xde6\x02\x00!\x01\x16\x00\x00\x00t/\xe5\xa3\x01\x00\x00\x00\x00\x00\x00\x00\x00\x01\x10\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x01YZ"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = checkXZDictionaries(data, 1<<20)
	})
}
