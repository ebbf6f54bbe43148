package diskimage

import (
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"os"
	"strings"
	"testing"
	"unicode/utf16"
)

const (
	linuxData    = "0FC63DAF-8483-4772-8E79-3D69D8477DE4"
	linuxRootX86 = "4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709"
)

// testPart is a partition of a disk a test writes by hand, in sectors.
type testPart struct {
	start, sectors int64
	gptType        string // "" is Linux filesystem data
	mbrType        byte   // 0 is 0x83
	bootable       bool
	name, guid     string
	fs             string // a raw image written into the partition
}

// guidBytes encodes a GUID in GPT's mixed-endian layout.
func guidBytes(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
	if err != nil || len(b) != 16 {
		panic("bad GUID " + s)
	}
	out := make([]byte, 16)
	binary.LittleEndian.PutUint32(out, binary.BigEndian.Uint32(b))
	binary.LittleEndian.PutUint16(out[4:], binary.BigEndian.Uint16(b[4:]))
	binary.LittleEndian.PutUint16(out[6:], binary.BigEndian.Uint16(b[6:]))
	copy(out[8:], b[8:])
	return out
}

// gptSpec describes a GPT's header fields; zero values take the usual ones.
type gptSpec struct {
	count, entrySize, hdrSize uint32
	arrayLBA                  uint64
	firstUsable, lastUsable   uint64
	badHeaderCRC, badArray    bool
}

// gptDisk writes a disk of sectors sectors holding parts under a GPT.
func gptDisk(t *testing.T, sectors int64, g gptSpec, parts []testPart) string {
	t.Helper()
	if g.count == 0 {
		g.count = 128
	}
	if g.entrySize == 0 {
		g.entrySize = 128
	}
	if g.hdrSize == 0 {
		g.hdrSize = 92
	}
	if g.arrayLBA == 0 {
		g.arrayLBA = 2
	}
	if g.firstUsable == 0 {
		g.firstUsable = g.arrayLBA + (uint64(g.count)*uint64(g.entrySize)+511)/512
	}
	if g.lastUsable == 0 {
		g.lastUsable = uint64(sectors) - 34
	}
	disk := make([]byte, sectors*512)
	le := binary.LittleEndian
	// The protective MBR.
	copy(disk[446:], []byte{0, 0, 2, 0, 0xee, 0xff, 0xff, 0xff, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	disk[510], disk[511] = 0x55, 0xaa
	var array []byte
	if n := uint64(g.count) * uint64(g.entrySize); n <= 64<<20 {
		array = make([]byte, n)
	}
	for i, p := range parts {
		e := array[i*int(g.entrySize):]
		typ := p.gptType
		if typ == "" {
			typ = linuxData
		}
		copy(e, guidBytes(typ))
		guid := p.guid
		if guid == "" {
			guid = "11111111-2222-3333-4444-5555555555" + string(rune('0'+i/10)) + string(rune('0'+i%10))
		}
		copy(e[16:], guidBytes(guid))
		le.PutUint64(e[32:], uint64(p.start))
		le.PutUint64(e[40:], uint64(p.start+p.sectors-1))
		if p.bootable {
			le.PutUint64(e[48:], 1<<2)
		}
		for j, c := range utf16.Encode([]rune(p.name)) {
			le.PutUint16(e[56+2*j:], c)
		}
		writeFS(t, disk, p)
	}
	h := disk[512:1024]
	copy(h, "EFI PART")
	le.PutUint32(h[8:], 0x00010000)
	le.PutUint32(h[12:], g.hdrSize)
	le.PutUint64(h[24:], 1)
	le.PutUint64(h[32:], uint64(sectors-1))
	le.PutUint64(h[40:], g.firstUsable)
	le.PutUint64(h[48:], g.lastUsable)
	copy(h[56:], guidBytes("AAAAAAAA-BBBB-CCCC-DDDD-EEEEEEEEEEEE"))
	le.PutUint64(h[72:], g.arrayLBA)
	le.PutUint32(h[80:], g.count)
	le.PutUint32(h[84:], g.entrySize)
	sum := crc32.ChecksumIEEE(array)
	if g.badArray {
		sum++
	}
	le.PutUint32(h[88:], sum)
	if off := g.arrayLBA * 512; off+uint64(len(array)) <= uint64(len(disk)) {
		copy(disk[off:], array)
	}
	hs := crc32.ChecksumIEEE(h[:min(g.hdrSize, 512)])
	if g.badHeaderCRC {
		hs++
	}
	le.PutUint32(h[16:], hs)
	return writeFile(t, t.TempDir(), "gpt.raw", disk)
}

func writeFS(t *testing.T, disk []byte, p testPart) {
	t.Helper()
	if p.fs == "" {
		return
	}
	fs := readFile(t, p.fs)
	if int64(len(fs)) > p.sectors*512 {
		t.Fatalf("a filesystem of %d bytes in a partition of %d sectors", len(fs), p.sectors)
	}
	copy(disk[p.start*512:], fs)
}

// mbrDisk writes a disk holding parts in an MBR: the first four primary,
// the rest logical, in an extended partition spanning from the fourth
// entry's start (which must be extended, type 0x05) to the disk's end.
func mbrDisk(t *testing.T, sectors int64, parts []testPart) string {
	t.Helper()
	disk := make([]byte, sectors*512)
	le := binary.LittleEndian
	le.PutUint32(disk[440:], 0x12345678)
	entry := func(sector []byte, i int, p testPart, base int64) {
		e := sector[446+16*i:]
		if p.bootable {
			e[0] = 0x80
		}
		e[4] = p.mbrType
		if e[4] == 0 {
			e[4] = 0x83
		}
		le.PutUint32(e[8:], uint32(p.start-base))
		le.PutUint32(e[12:], uint32(p.sectors))
	}
	for i, p := range parts[:min(4, len(parts))] {
		entry(disk, i, p, 0)
		writeFS(t, disk, p)
	}
	disk[510], disk[511] = 0x55, 0xaa
	if len(parts) > 4 {
		ext := parts[3].start
		for i, p := range parts[4:] {
			ebr := p.start - 2048
			sector := disk[ebr*512:][:512]
			entry(sector, 0, p, ebr)
			if i+5 < len(parts) {
				next := parts[i+5].start - 2048
				entry(sector, 1, testPart{start: next, sectors: 1, mbrType: 0x05}, ext)
			}
			sector[510], sector[511] = 0x55, 0xaa
			writeFS(t, disk, p)
		}
	}
	return writeFile(t, t.TempDir(), "mbr.raw", disk)
}

// sectorsOf is the size of a raw image in sectors.
func sectorsOf(t *testing.T, file string) int64 {
	t.Helper()
	st, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	return st.Size() / 512
}

// TestRootChoice: a disk with a hardened decoy and a weak root must never
// be judged by the decoy. The root is the one a boot would mount, and a
// disk where that is unclear is refused until --root-partition says.
func TestRootChoice(t *testing.T) {
	hardened := ext4Of(t, osTree(t, "hardened", nil), "24M")
	weak := ext4Of(t, osTree(t, "weak", nil), "16M")
	data := ext4Of(t, writeTree(t, map[string]string{"etc/ssh/sshd_config": "PermitRootLogin data\n"}), "24M")
	const weakUUID = "0c6f1a2b-3d4e-4f50-8a61-72b3c4d5e6f7"
	selfRoot := ext4Of(t, osTree(t, "weak", map[string]string{"etc/fstab": "# static\nUUID=" + weakUUID + " / ext4 errors=remount-ro 0 1\n"}), "16M", "-U", weakUUID)
	labelled := ext4Of(t, osTree(t, "weak", map[string]string{"etc/fstab": "LABEL=rootfs / ext4 defaults 0 1\n"}), "16M", "-L", "rootfs")
	partuuid := ext4Of(t, osTree(t, "weak", map[string]string{"etc/fstab": "/dev/disk/by-partuuid/9e8d7c6b-5a49-4838-a726-150f0e0d0c0b / ext4 defaults 0 1\n"}), "16M")
	// A partition starting like an xfs filesystem: its superblock magic.
	xfs := writeFile(t, t.TempDir(), "xfs.raw", append([]byte("XFSB"), make([]byte, 4096)...))
	// The hardened decoy is the larger, the first, and what today's
	// "largest ext4 partition" rule scanned.
	two := func(second string, mod func(p []testPart)) []testPart {
		p := []testPart{{start: 2048, sectors: 24 << 11, fs: hardened}, {start: 2048 + 24<<11, sectors: 16 << 11, fs: second}}
		if mod != nil {
			mod(p)
		}
		return p
	}
	size := int64(2048 + 40<<11 + 2048)
	cases := map[string]struct {
		disk  string
		opts  Options
		which string // the tree read, or "" for refused
		err   []string
	}{
		"two OS trees": {disk: gptDisk(t, size, gptSpec{}, two(weak, nil)), err: []string{"cannot tell which partition holds the root filesystem", "partition 1 (ext4, 24 MiB, os-release)", "partition 2 (ext4, 16 MiB, os-release)", "choose the root partition"}},
		"chosen":       {disk: gptDisk(t, size, gptSpec{}, two(weak, nil)), opts: Options{RootPartition: 2}, which: "weak"},
		"chosen decoy": {disk: gptDisk(t, size, gptSpec{}, two(weak, nil)), opts: Options{RootPartition: 1}, which: "hardened"},
		"root type":    {disk: gptDisk(t, size, gptSpec{}, two(weak, func(p []testPart) { p[1].gptType = linuxRootX86 })), which: "weak"},
		"two root types": {disk: gptDisk(t, size, gptSpec{}, two(weak, func(p []testPart) { p[0].gptType, p[1].gptType = linuxRootX86, linuxRootX86 })),
			err: []string{"partition 1 (ext4, 24 MiB, os-release, Linux root type (x86-64))", "partition 2"}},
		"decoy has no OS": {disk: gptDisk(t, size, gptSpec{}, []testPart{{start: 2048, sectors: 24 << 11, fs: data}, {start: 2048 + 24<<11, sectors: 16 << 11, fs: weak}}), which: "weak"},
		"fstab UUID":      {disk: gptDisk(t, size, gptSpec{}, two(selfRoot, nil)), which: "weak"},
		"fstab LABEL":     {disk: gptDisk(t, size, gptSpec{}, two(labelled, nil)), which: "weak"},
		"fstab PARTUUID":  {disk: gptDisk(t, size, gptSpec{}, two(partuuid, func(p []testPart) { p[1].guid = "9E8D7C6B-5A49-4838-A726-150F0E0D0C0B" })), which: "weak"},
		"MBR bootable":    {disk: mbrDisk(t, size, two(weak, func(p []testPart) { p[1].bootable = true })), which: "weak"},
		"MBR, no signal":  {disk: mbrDisk(t, size, two(weak, nil)), err: []string{"partition 1", "partition 2", "choose the root partition"}},
		"root type without ext4": {disk: gptDisk(t, size, gptSpec{}, []testPart{{start: 2048, sectors: 24 << 11, fs: hardened}, {start: 2048 + 24<<11, sectors: 16 << 11, gptType: linuxRootX86, fs: xfs}}),
			err: []string{"partition 2 has the GPT type of a Linux root filesystem (x86-64) but holds no ext4 filesystem", "choose the root partition"}},
		"xfs beside": {disk: gptDisk(t, size, gptSpec{}, []testPart{{start: 2048, sectors: 24 << 11, fs: hardened}, {start: 2048 + 24<<11, sectors: 16 << 11, fs: xfs}}),
			err: []string{"partition 2 holds an xfs filesystem, which cannot be read here"}},
		"xfs beside, chosen": {disk: gptDisk(t, size, gptSpec{}, []testPart{{start: 2048, sectors: 24 << 11, fs: hardened}, {start: 2048 + 24<<11, sectors: 16 << 11, fs: xfs}}),
			opts: Options{RootPartition: 1}, which: "hardened"},
		"no such partition": {disk: gptDisk(t, size, gptSpec{}, two(weak, nil)), opts: Options{RootPartition: 3},
			err: []string{"root partition 3: no such partition in the GPT table with partitions 1, 2"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if c.which != "" {
				im := mustRead(t, c.opts, c.disk, c.which)
				if im.Root == nil || im.Offset != im.Root.Start {
					t.Errorf("root %+v at byte %d", im.Root, im.Offset)
				}
				return
			}
			mustFail(t, c.opts, c.disk, c.err...)
		})
	}
}

// TestLogicalPartitions: a root in an MBR logical partition is found, and
// numbered as Linux numbers it.
func TestLogicalPartitions(t *testing.T) {
	weak := ext4Of(t, osTree(t, "weak", nil), "8M")
	parts := []testPart{
		{start: 2048, sectors: 2048, mbrType: 0x0b},
		{start: 4096, sectors: 2048, mbrType: 0x82},
		{start: 6144, sectors: 2048, mbrType: 0x0b},
		{start: 8192, sectors: 2*2048 + 2*(8<<11), mbrType: 0x05},
		{start: 8192 + 2048, sectors: 2048, mbrType: 0x82},
		{start: 8192 + 2*2048 + 2048, sectors: 8 << 11, fs: weak},
	}
	disk := mbrDisk(t, 8192+2*2048+2*(8<<11)+2048, parts)
	im := mustRead(t, Options{}, disk, "weak")
	if im.Root.Index != 6 {
		t.Errorf("the root is partition %d, want 6", im.Root.Index)
	}
	ps, _ := im.Partitions()
	if len(ps) != 5 || ps[4].Index != 6 || ps[4].UUID != "12345678-06" {
		t.Errorf("partitions %+v", ps)
	}
}

// TestPartitionTableDamage: tables a kernel would truncate, or that
// overlap, or whose header sizes the entry array past sane bounds.
func TestPartitionTableDamage(t *testing.T) {
	weak := ext4Of(t, osTree(t, "weak", nil), "8M")
	one := []testPart{{start: 2048, sectors: 8 << 11, fs: weak}}
	size := int64(2048 + 8<<11 + 2048)
	cases := map[string]struct {
		disk string
		err  string
	}{
		"GPT overlap": {gptDisk(t, size, gptSpec{}, []testPart{{start: 2048, sectors: 8 << 11, fs: weak}, {start: 4096, sectors: 100}}), "partitions 1 and 2 overlap"},
		"GPT partition past the usable sectors": {gptDisk(t, size, gptSpec{}, []testPart{{start: 2048, sectors: 8 << 11, fs: weak}, {start: size - 100, sectors: 90}}),
			"GPT partition 2: sectors"},
		"GPT usable past the disk":  {gptDisk(t, size, gptSpec{lastUsable: uint64(size)}, one), "do not fit the disk's"},
		"GPT entry size 64":         {gptDisk(t, size, gptSpec{entrySize: 64}, one), "partition entry size 64"},
		"GPT entry size 129":        {gptDisk(t, size, gptSpec{entrySize: 129, firstUsable: 40}, one), "partition entry size 129"},
		"GPT entries past the cap":  {gptDisk(t, size, gptSpec{count: gptMaxEntries + 1}, one), "4097 partition entries of 128 bytes"},
		"GPT array past 1 MiB":      {gptDisk(t, size, gptSpec{count: 4096, entrySize: 512}, one), "4096 partition entries of 512 bytes"},
		"GPT array over the usable": {gptDisk(t, size, gptSpec{firstUsable: 20}, one), "does not lie between the header and the first usable sector"},
		"GPT header checksum":       {gptDisk(t, size, gptSpec{badHeaderCRC: true}, one), "GPT header: bad checksum"},
		"GPT array checksum":        {gptDisk(t, size, gptSpec{badArray: true}, one), "bad checksum of the partition entry array"},
		"MBR overlap":               {mbrDisk(t, size, []testPart{{start: 2048, sectors: 8 << 11, fs: weak}, {start: 4096, sectors: 100}}), "partitions 1 and 2 overlap"},
		"MBR past the disk":         {mbrDisk(t, size, []testPart{{start: 2048, sectors: 8 << 11, fs: weak}, {start: size - 10, sectors: 11}}), "lie outside the disk's"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) { mustFail(t, Options{}, c.disk, c.err) })
	}
	// At the limits: 256-byte entries, and 4096 entries.
	mustRead(t, Options{}, gptDisk(t, size, gptSpec{entrySize: 256}, one), "weak")
	mustRead(t, Options{}, gptDisk(t, size, gptSpec{count: gptMaxEntries}, one), "weak")

	t.Run("protective MBR without GPT", func(t *testing.T) {
		disk := readFile(t, gptDisk(t, size, gptSpec{}, one))
		copy(disk[512:], "NOT PART")
		mustFail(t, Options{}, writeFile(t, t.TempDir(), "pmbr.raw", disk), "a protective MBR, but no GPT header")
	})
	t.Run("whole disk and a table", func(t *testing.T) {
		disk := readFile(t, weak)
		copy(disk, readFile(t, mbrDisk(t, 4096, []testPart{{start: 2048, sectors: 1024}}))[:512])
		mustFail(t, Options{}, writeFile(t, t.TempDir(), "both.raw", disk), "an ext4 filesystem fills the whole disk, which also carries a MBR table with partitions 1")
	})
}

// TestCraftedGPTHeader is 1 KiB: a protective MBR and a GPT header asking
// for 2^32-1 entries of 128 bytes, which go-diskfs allocates (512 GiB) from
// the header before any check.
func TestCraftedGPTHeader(t *testing.T) {
	disk := readFile(t, gptDisk(t, 2, gptSpec{count: 0xffffffff, lastUsable: 1, firstUsable: 1}, nil))
	mustFail(t, Options{}, writeFile(t, t.TempDir(), "gpt-huge.raw", disk[:1024]), "4294967295 partition entries of 128 bytes")
}

// TestMBRQcow2: an MBR-partitioned disk converted to qcow2 opens; the GPT
// probe of the last sector once made it "truncated".
func TestMBRQcow2(t *testing.T) {
	weak := ext4Of(t, osTree(t, "weak", nil), "8M")
	size := int64(2048 + 8<<11 + 2048)
	raw := mbrDisk(t, size, []testPart{{start: 64, sectors: 1024, mbrType: 0x0b}, {start: 2048, sectors: 8 << 11, fs: weak}})
	q := convert(t, raw)
	mustRead(t, Options{}, q, "weak")
	mustRead(t, Options{}, convert(t, raw, "-c"), "weak")
}
