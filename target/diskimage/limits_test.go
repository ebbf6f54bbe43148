package diskimage

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
)

// The limits of docs/limits.md that the other tests do not take to their
// value and one step past it.

// TestHeaderExtensionLimits: the backing format name, the extensions'
// room in the header cluster, and each known extension at most once.
func TestHeaderExtensionLimits(t *testing.T) {
	ext := func(typ uint32, data []byte) []byte {
		b := binary.BigEndian.AppendUint32(nil, typ)
		b = binary.BigEndian.AppendUint32(b, uint32(len(data)))
		return append(b, append(data, make([]byte, (8-len(data)%8)%8)...)...)
	}
	refs := func(exts ...[]byte) (*qcowRefs, error) {
		hc := make([]byte, 1<<16)
		copy(hc, header(nil))
		copy(hc[112:], bytes.Join(exts, nil))
		h, err := parseQcowHeader(hc, 1<<40)
		if err != nil {
			t.Fatal(err)
		}
		return parseQcowRefs(h, hc)
	}
	if r, err := refs(ext(extBackingFormat, []byte(strings.Repeat("q", qcowMaxFormatName)))); err != nil || len(r.backingFormat) != 15 {
		t.Errorf("a format name of 15 bytes: %v", err)
	}
	if _, err := refs(ext(extBackingFormat, []byte(strings.Repeat("q", qcowMaxFormatName+1)))); err == nil || !strings.Contains(err.Error(), "format name of 16 bytes, over 15") {
		t.Errorf("a format name of 16 bytes: %v", err)
	}
	if _, err := refs(ext(extBackingFormat, []byte("raw")), ext(extBackingFormat, []byte("raw"))); err == nil || !strings.Contains(err.Error(), "appears twice") {
		t.Errorf("two format names: %v", err)
	}
	// An extension filling the header cluster to its last byte, then one
	// byte more.
	room := 1<<16 - 112 - 8
	if _, err := refs(ext(0x1234, make([]byte, room))); err != nil {
		t.Errorf("an extension to the cluster's end: %v", err)
	}
	hc := make([]byte, 1<<16)
	copy(hc, header(nil))
	binary.BigEndian.PutUint32(hc[112:], 0x1234)
	binary.BigEndian.PutUint32(hc[116:], uint32(room+1))
	h, _ := parseQcowHeader(hc, 1<<40)
	if _, err := parseQcowRefs(h, hc); err == nil || !strings.Contains(err.Error(), "runs past the header cluster") {
		t.Errorf("an extension past the cluster's end: %v", err)
	}
	if _, err := refs(ext(extExternalData, []byte("/dev/sda"))); err == nil || !strings.Contains(err.Error(), `external data file "/dev/sda"`) {
		t.Errorf("an external data file name: %v", err)
	}
}

// snapshotImage is a qcow2 of 64 KiB clusters whose snapshot table at
// cluster 5 holds n entries of entry bytes each (padding included), the
// first with extra bytes of extra data, in a sparse file of size bytes.
func snapshotImage(t *testing.T, n, entry, extra, size int) string {
	const cs = 1 << 16
	l := &qcowLayout{clusterBits: 16, size: 1 << 20, fileSize: size}
	l.header = map[int][]byte{60: be32(uint32(n)), 64: be64(5 * cs)}
	data := l.bytes()
	for i := range n {
		e := data[5*cs+i*entry:]
		// No L1 table; the ID and name fill the entry.
		x := extra
		if i > 0 {
			x = 0
		}
		binary.BigEndian.PutUint32(e[36:], uint32(x))
		idLen := min(entry-40-x, 65535)
		binary.BigEndian.PutUint16(e[12:], uint16(idLen))
		binary.BigEndian.PutUint16(e[14:], uint16(min(entry-40-x-idLen, 65535)))
	}
	return writeFile(t, t.TempDir(), "snap.qcow2", data)
}

// TestSnapshotLimits: extra data per snapshot, and the table's size.
func TestSnapshotLimits(t *testing.T) {
	open := func(file string) error {
		c := &chain{w: newWork(t.Context(), Limits{})}
		defer c.close()
		h, err := c.openTop(file)
		if err != nil {
			return err
		}
		_, _, err = c.openDisk(h, "", 0)
		return err
	}
	const cs = 1 << 16
	if err := open(snapshotImage(t, 1, 40+qcowMaxSnapshotExtra, qcowMaxSnapshotExtra, 7*cs)); err != nil {
		t.Errorf("1024 bytes of extra data: %v", err)
	}
	if err := open(snapshotImage(t, 1, 40+qcowMaxSnapshotExtra+8, qcowMaxSnapshotExtra+1, 7*cs)); err == nil || !strings.Contains(err.Error(), "1025 bytes of extra data, over 1024") {
		t.Errorf("1025 bytes of extra data: %v", err)
	}
	// Entries of 2 × 65535 name bytes: 511 fit qemu's 64 MiB, 512 do not.
	const entry = (40 + 2*65535 + 7) &^ 7
	size := 5*cs + 512*entry + cs
	if err := open(snapshotImage(t, qcowMaxSnapshotsBytes/entry, entry, 0, size)); err != nil {
		t.Errorf("a snapshot table of %d bytes: %v", qcowMaxSnapshotsBytes/entry*entry, err)
	}
	if err := open(snapshotImage(t, qcowMaxSnapshotsBytes/entry+1, entry, 0, size)); err == nil || !strings.Contains(err.Error(), "the snapshot table exceeds qemu's limit of 67108864 bytes") {
		t.Errorf("a snapshot table past 64 MiB: %v", err)
	}
}

// superblock is a synthetic ext4 superblock with its fields consistent:
// logBlock, blocks, blocks and inodes per group, inode size; 64-bit with
// descriptors of descSize when that is set.
type superblock struct {
	logBlock                uint32
	blocks                  uint64
	bpg, ipg                uint32
	inodeSize, descSize     uint16
	inodesExtra, firstBlock uint32
}

func (s superblock) bytes() []byte {
	b := make([]byte, 2048)
	sb := b[1024:]
	le := binary.LittleEndian
	bs := uint64(1024) << s.logBlock
	first := uint64(s.firstBlock)
	if bs == 1024 && first == 0 {
		first = 1
	}
	groups := (s.blocks - first + uint64(s.bpg) - 1) / uint64(s.bpg)
	le.PutUint32(sb[0x0:], uint32(groups*uint64(s.ipg))+s.inodesExtra)
	le.PutUint32(sb[0x4:], uint32(s.blocks))
	le.PutUint32(sb[0x150:], uint32(s.blocks>>32))
	le.PutUint32(sb[0x14:], uint32(first))
	le.PutUint32(sb[0x18:], s.logBlock)
	le.PutUint32(sb[0x20:], s.bpg)
	le.PutUint32(sb[0x28:], s.ipg)
	le.PutUint16(sb[0x38:], ext4Magic)
	le.PutUint32(sb[0x4c:], 1)
	le.PutUint16(sb[0x58:], s.inodeSize)
	if s.descSize != 0 {
		le.PutUint32(sb[0x60:], incompat64Bit)
		le.PutUint16(sb[0xfe:], s.descSize)
	}
	return b
}

// TestExt4SuperblockLimits takes each superblock bound to its value and
// one step past.
func TestExt4SuperblockLimits(t *testing.T) {
	base := superblock{logBlock: 2, blocks: 1 << 15, bpg: 1 << 15, ipg: 1 << 13, inodeSize: 256}
	const room = 1 << 50
	cases := []struct {
		name     string
		at, past superblock
		room     int64
		err      string
	}{
		{"block size", func() superblock { s := base; s.logBlock, s.bpg = 6, 1<<19; return s }(), func() superblock { s := base; s.logBlock = 7; return s }(), room, "block size 2^7 KiB"},
		{"inode size", func() superblock { s := base; s.inodeSize = 4096; s.ipg = 8; return s }(), func() superblock { s := base; s.inodeSize = 8192; return s }(), room, "inode size 8192"},
		{"inode size small", base, func() superblock { s := base; s.inodeSize = 64; return s }(), room, "inode size 64"},
		{"blocks per group", func() superblock { s := base; s.bpg = 8 * 4096; return s }(), func() superblock { s := base; s.bpg = 8*4096 + 1; return s }(), room, "32769 blocks per group"},
		{"blocks per group small", func() superblock { s := base; s.bpg, s.ipg = 8, 16; return s }(), func() superblock { s := base; s.bpg = 7; return s }(), room, "7 blocks per group"},
		{"inodes per group", func() superblock { s := base; s.ipg = 8 * 4096; return s }(), func() superblock { s := base; s.ipg = 8*4096 + 1; return s }(), room, "32769 inodes per group"},
		{"inodes count", base, func() superblock { s := base; s.inodesExtra = 1; return s }(), room, "8193 inodes, but 1 groups of 8192"},
		{"blocks in the room", base, base, 1<<15*4096 - 1, "needs 32768 blocks of 4096 bytes, the disk holds 134217727 bytes"},
		{"descriptor size", func() superblock { s := base; s.descSize = 1024; return s }(), func() superblock { s := base; s.descSize = 2048; return s }(), room, "group descriptor size 2048"},
		{"descriptor size small", func() superblock { s := base; s.descSize = 64; return s }(), func() superblock { s := base; s.descSize = 32; return s }(), room, "group descriptor size 32"},
		// 2^20 groups of 8 blocks (1 KiB), 64-byte descriptors: 64 MiB.
		{"descriptor table", superblock{logBlock: 0, blocks: 1 + 8<<20, bpg: 8, ipg: 8, inodeSize: 128, descSize: 64}, superblock{logBlock: 0, blocks: 1 + 8<<20 + 8, bpg: 8, ipg: 8, inodeSize: 128, descSize: 64}, room,
			"group descriptor table of 67108928 bytes exceeds 67108864"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := c.room
			if c.name == "blocks in the room" {
				if _, err := readExt4Super(bytes.NewReader(c.at.bytes()), 0, r+1); err != nil {
					t.Errorf("at the limit: %v", err)
				}
			} else if _, err := readExt4Super(bytes.NewReader(c.at.bytes()), 0, r); err != nil {
				t.Errorf("at the limit: %v", err)
			}
			if _, err := readExt4Super(bytes.NewReader(c.past.bytes()), 0, r); err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("past the limit: %v, want %q", err, c.err)
			}
		})
	}
}

// TestPartitionLimits: the GPT header's size and entry array, and MBR
// logical partitions.
func TestPartitionLimits(t *testing.T) {
	weak := ext4Of(t, osTree(t, "weak", nil), "8M")
	late := []testPart{{start: 4096, sectors: 8 << 11, fs: weak}}
	size := int64(4096 + 8<<11 + 2048)
	mustRead(t, Options{}, gptDisk(t, size, gptSpec{count: 4096, entrySize: 256}, late), "weak")
	mustFail(t, Options{}, gptDisk(t, size, gptSpec{count: 4096, entrySize: 512}, late), "in at most 1048576 bytes")
	mustRead(t, Options{}, gptDisk(t, size, gptSpec{hdrSize: 512}, late), "weak")
	mustFail(t, Options{}, gptDisk(t, size, gptSpec{hdrSize: 513}, late), "header size 513 outside 92..512")
	mustFail(t, Options{}, gptDisk(t, size, gptSpec{hdrSize: 91}, late), "header size 91 outside 92..512")

	// A chain of n logical partitions of one sector, each after its EBR.
	chain := func(n int) []byte {
		d := make([]byte, (64+2*n+8)*512)
		le := binary.LittleEndian
		entry := func(s []byte, i int, typ byte, start, size uint32) {
			e := s[446+16*i:]
			e[4] = typ
			le.PutUint32(e[8:], start)
			le.PutUint32(e[12:], size)
		}
		entry(d, 0, 0x05, 64, uint32(2*n+4))
		d[510], d[511] = 0x55, 0xaa
		for i := range n {
			ebr := d[(64+2*i)*512:]
			entry(ebr, 0, 0x83, 1, 1)
			if i+1 < n {
				entry(ebr, 1, 0x05, uint32(2*(i+1)), 2)
			}
			ebr[510], ebr[511] = 0x55, 0xaa
		}
		return d
	}
	if tb, err := readPartitionTable(bytes.NewReader(chain(maxLogical)), int64(len(chain(maxLogical)))); err != nil || len(tb.Parts) != maxLogical || tb.Parts[maxLogical-1].Index != 4+maxLogical {
		t.Errorf("%d logical partitions: %v", maxLogical, err)
	}
	if _, err := readPartitionTable(bytes.NewReader(chain(maxLogical+1)), int64(len(chain(maxLogical+1)))); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("more than %d logical partitions", maxLogical)) {
		t.Errorf("%d logical partitions: %v", maxLogical+1, err)
	}
	loop := chain(3)
	binary.LittleEndian.PutUint32(loop[(64+4)*512+446+16+8:], 0)
	loop[(64+4)*512+446+16+4] = 0x05
	binary.LittleEndian.PutUint32(loop[(64+4)*512+446+16+8:], 2)
	if _, err := readPartitionTable(bytes.NewReader(loop), int64(len(loop))); err == nil || !strings.Contains(err.Error(), "loop") {
		t.Errorf("an EBR chain pointing back: %v", err)
	}
}
