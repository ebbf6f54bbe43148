package diskimage

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"strings"
	"unicode/utf16"
)

// The partition table is read here, not by go-diskfs: its GPT reader sizes
// the entry array from the header before any check (count × size, both
// 32-bit), refuses entry sizes other than 128, and probes the backup header
// at the disk's last sector. Every field is checked first, and a table that
// a kernel would truncate or that overlaps itself is refused.

// Bounds of a GPT entry array: the UEFI spec asks for room for 128 entries
// of 128 bytes; tools never write more than a few times that.
const (
	gptMinEntrySize = 128
	gptMaxEntries   = 4096
	gptMaxArray     = 1 << 20
	maxLogical      = 128 // MBR logical partitions followed
)

// GPT partition type GUIDs of a Linux root filesystem, per the
// Discoverable Partitions Specification, for the architectures GPU hosts
// run.
var linuxRootTypes = map[string]string{
	"4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709": "x86-64",
	"B921B045-1DF0-41C3-AF44-4C6F280D3FAE": "arm64",
}

// Partition is one entry of the image's partition table.
type Partition struct {
	// Index is the partition's number in the table, from 1; MBR logical
	// partitions count from 5, as Linux numbers them.
	Index       int
	Start, Size int64
	// UUID and Label are the table's partition GUID and name (GPT), which
	// crypttab and fstab name as PARTUUID= and PARTLABEL=. For MBR, UUID is
	// the disk signature and the number, as Linux forms PARTUUID.
	UUID, Label string
	// Type is the GPT type GUID, or the MBR type byte in hex.
	Type string
	// Bootable is the MBR active flag, or GPT's legacy BIOS bootable
	// attribute.
	Bootable bool
	// R reads the partition; reads past Size fail.
	R io.ReaderAt
}

// partitionTable is a checked table: "gpt" or "mbr", and its partitions in
// table order. A disk with no table has Kind "".
type partitionTable struct {
	Kind  string
	Parts []Partition
}

var errNoTable = errors.New("no partition table")

// readPartitionTable reads the GPT or MBR table of a disk of size bytes.
// It returns errNoTable when sector 0 carries no MBR signature.
func readPartitionTable(r io.ReaderAt, size int64) (*partitionTable, error) {
	if size < 2*sectorSize {
		return nil, errNoTable
	}
	lba01 := make([]byte, 2*sectorSize)
	if _, err := r.ReadAt(lba01, 0); err != nil {
		return nil, fmt.Errorf("reading the partition table: %w", err)
	}
	mbrSector, hdr := lba01[:sectorSize], lba01[sectorSize:]
	if bytes.HasPrefix(hdr, []byte("EFI PART")) {
		return readGPT(r, size, hdr)
	}
	if mbrSector[510] != 0x55 || mbrSector[511] != 0xaa {
		return nil, errNoTable
	}
	for i := range 4 {
		if mbrSector[446+16*i+4] == 0xee {
			return nil, errors.New("a protective MBR, but no GPT header at sector 1")
		}
	}
	return readMBR(r, size, mbrSector)
}

// gptGUID formats a GUID stored in GPT's mixed-endian layout.
func gptGUID(b []byte) string {
	le := binary.LittleEndian
	return fmt.Sprintf("%08X-%04X-%04X-%X-%X", le.Uint32(b), le.Uint16(b[4:]), le.Uint16(b[6:]), b[8:10], b[10:16])
}

func readGPT(r io.ReaderAt, size int64, hdr []byte) (*partitionTable, error) {
	le := binary.LittleEndian
	hdrSize := le.Uint32(hdr[12:])
	if le.Uint32(hdr[8:]) != 0x00010000 {
		return nil, fmt.Errorf("GPT header: revision 0x%08x, want 0x00010000", le.Uint32(hdr[8:]))
	}
	if hdrSize < 92 || hdrSize > sectorSize {
		return nil, fmt.Errorf("GPT header: header size %d outside 92..%d", hdrSize, sectorSize)
	}
	sum := le.Uint32(hdr[16:])
	h := slices.Clone(hdr[:hdrSize])
	clear(h[16:20])
	if crc32.ChecksumIEEE(h) != sum {
		return nil, errors.New("GPT header: bad checksum")
	}
	sectors := uint64(size / sectorSize)
	myLBA, firstUsable, lastUsable := le.Uint64(hdr[24:]), le.Uint64(hdr[40:]), le.Uint64(hdr[48:])
	arrayLBA, count, entrySize := le.Uint64(hdr[72:]), le.Uint32(hdr[80:]), le.Uint32(hdr[84:])
	switch {
	case myLBA != 1:
		return nil, fmt.Errorf("GPT header: my LBA %d, want 1", myLBA)
	case firstUsable > lastUsable || lastUsable >= sectors:
		return nil, fmt.Errorf("GPT header: usable sectors %d..%d do not fit the disk's %d sectors", firstUsable, lastUsable, sectors)
	case entrySize < gptMinEntrySize || entrySize&(entrySize-1) != 0:
		return nil, fmt.Errorf("GPT header: partition entry size %d: want a power of two of at least %d", entrySize, gptMinEntrySize)
	case count == 0 || count > gptMaxEntries || uint64(count)*uint64(entrySize) > gptMaxArray:
		return nil, fmt.Errorf("GPT header: %d partition entries of %d bytes: want 1 to %d entries in at most %d bytes", count, entrySize, gptMaxEntries, gptMaxArray)
	}
	arrayBytes := uint64(count) * uint64(entrySize)
	arraySectors := (arrayBytes + sectorSize - 1) / sectorSize
	// The array lies after the header and before the first usable sector.
	if arrayLBA < 2 || arrayLBA > sectors || arraySectors > firstUsable || arrayLBA > firstUsable-arraySectors {
		return nil, fmt.Errorf("GPT header: the partition entry array at sector %d (%d sectors) does not lie between the header and the first usable sector %d", arrayLBA, arraySectors, firstUsable)
	}
	array := make([]byte, arrayBytes)
	if _, err := r.ReadAt(array, int64(arrayLBA)*sectorSize); err != nil {
		return nil, fmt.Errorf("reading the GPT partition entries: %w", err)
	}
	if crc32.ChecksumIEEE(array) != le.Uint32(hdr[88:]) {
		return nil, errors.New("GPT: bad checksum of the partition entry array")
	}
	t := &partitionTable{Kind: "gpt"}
	for i := range int(count) {
		e := array[i*int(entrySize):][:gptMinEntrySize]
		if isZero(e[:16]) {
			continue
		}
		first, last := le.Uint64(e[32:]), le.Uint64(e[40:])
		if first < firstUsable || last > lastUsable || first > last {
			return nil, fmt.Errorf("GPT partition %d: sectors %d..%d lie outside the usable sectors %d..%d", i+1, first, last, firstUsable, lastUsable)
		}
		name := make([]uint16, 0, 36)
		for j := 56; j < 128; j += 2 {
			c := le.Uint16(e[j:])
			if c == 0 {
				break
			}
			name = append(name, c)
		}
		t.Parts = append(t.Parts, Partition{
			Index: i + 1, Start: int64(first) * sectorSize, Size: int64(last-first+1) * sectorSize,
			Type: gptGUID(e[0:16]), UUID: gptGUID(e[16:32]), Label: string(utf16.Decode(name)),
			Bootable: le.Uint64(e[48:])&(1<<2) != 0,
		})
	}
	return t, t.checkOverlap()
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

func isExtended(typ byte) bool { return typ == 0x05 || typ == 0x0f || typ == 0x85 }

func readMBR(r io.ReaderAt, size int64, sector0 []byte) (*partitionTable, error) {
	le := binary.LittleEndian
	sectors := uint64(size / sectorSize)
	signature := le.Uint32(sector0[440:])
	t := &partitionTable{Kind: "mbr"}
	var extended []Partition
	for i := range 4 {
		e := sector0[446+16*i:][:16]
		status, typ := e[0], e[4]
		start, n := uint64(le.Uint32(e[8:])), uint64(le.Uint32(e[12:]))
		if typ == 0 || n == 0 {
			continue
		}
		if status != 0 && status != 0x80 {
			return nil, fmt.Errorf("MBR partition %d: status byte 0x%02x, want 0x00 or 0x80", i+1, status)
		}
		if start == 0 || start+n > sectors {
			return nil, fmt.Errorf("MBR partition %d: sectors %d..%d lie outside the disk's %d sectors", i+1, start, start+n-1, sectors)
		}
		p := Partition{Index: i + 1, Start: int64(start) * sectorSize, Size: int64(n) * sectorSize,
			Type: fmt.Sprintf("%02x", typ), UUID: fmt.Sprintf("%08x-%02x", signature, i+1), Bootable: status == 0x80}
		if isExtended(typ) {
			extended = append(extended, p)
			continue
		}
		t.Parts = append(t.Parts, p)
	}
	if len(extended) > 1 {
		return nil, errors.New("MBR: more than one extended partition")
	}
	if len(extended) == 1 {
		// The container counts for overlaps with the primaries, not with
		// the logical partitions inside it.
		outer := &partitionTable{Parts: append(slices.Clone(t.Parts), extended[0])}
		if err := outer.checkOverlap(); err != nil {
			return nil, err
		}
		if err := t.readLogical(r, extended[0], signature); err != nil {
			return nil, err
		}
	}
	return t, t.checkOverlap()
}

// readLogical follows the chain of extended boot records inside ext, each
// giving one logical partition and the place of the next record.
func (t *partitionTable) readLogical(r io.ReaderAt, ext Partition, signature uint32) error {
	le := binary.LittleEndian
	base := uint64(ext.Start / sectorSize)
	end := base + uint64(ext.Size/sectorSize)
	ebr := base
	sector := make([]byte, sectorSize)
	seen := map[uint64]bool{}
	for n := 0; ; n++ {
		if n >= maxLogical {
			return fmt.Errorf("MBR: more than %d logical partitions", maxLogical)
		}
		if seen[ebr] {
			return fmt.Errorf("MBR: the extended boot records loop at sector %d", ebr)
		}
		seen[ebr] = true
		if _, err := r.ReadAt(sector, int64(ebr)*sectorSize); err != nil {
			return fmt.Errorf("reading the extended boot record at sector %d: %w", ebr, err)
		}
		if sector[510] != 0x55 || sector[511] != 0xaa {
			return fmt.Errorf("MBR: no signature on the extended boot record at sector %d", ebr)
		}
		e, next := sector[446:462], sector[462:478]
		if typ, start, size := e[4], uint64(le.Uint32(e[8:])), uint64(le.Uint32(e[12:])); typ != 0 && size != 0 {
			first := ebr + start
			if start == 0 || first+size > end {
				return fmt.Errorf("MBR logical partition %d: sectors %d..%d lie outside the extended partition %d..%d", 5+n, first, first+size-1, base, end-1)
			}
			t.Parts = append(t.Parts, Partition{Index: 5 + n, Start: int64(first) * sectorSize, Size: int64(size) * sectorSize,
				Type: fmt.Sprintf("%02x", typ), UUID: fmt.Sprintf("%08x-%02x", signature, 5+n), Bootable: e[0] == 0x80})
		}
		nextStart := uint64(le.Uint32(next[8:]))
		if next[4] == 0 || nextStart == 0 {
			return nil
		}
		if !isExtended(next[4]) || base+nextStart >= end {
			return fmt.Errorf("MBR: the extended boot record at sector %d points outside the extended partition", ebr)
		}
		ebr = base + nextStart
	}
}

// checkOverlap refuses partitions that share a sector: whichever a kernel
// mounts, the other's checks would be judged on the same bytes or a decoy.
func (t *partitionTable) checkOverlap() error {
	parts := slices.Clone(t.Parts)
	slices.SortFunc(parts, func(a, b Partition) int { return cmp.Compare(a.Start, b.Start) })
	for i := 1; i < len(parts); i++ {
		if a, b := parts[i-1], parts[i]; b.Start < a.Start+a.Size {
			return fmt.Errorf("partitions %d and %d overlap (bytes %d..%d and %d..%d)", a.Index, b.Index, a.Start, a.Start+a.Size-1, b.Start, b.Start+b.Size-1)
		}
	}
	return nil
}

// String names the partitions for an error message.
func (t *partitionTable) String() string {
	var s []string
	for _, p := range t.Parts {
		s = append(s, fmt.Sprint(p.Index))
	}
	return fmt.Sprintf("%s table with partitions %s", strings.ToUpper(t.Kind), strings.Join(s, ", "))
}
