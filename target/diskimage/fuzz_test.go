package diskimage

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"
)

// FuzzOpen damages a sound image, a patch at an offset, and reads all of it:
// whatever the bytes, Open and the reads return, with errors and no panic.
// Patches land in the superblock, group descriptors, inode tables and
// directories of a small filesystem, where the parser trusts the most.
func FuzzOpen(f *testing.F) {
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		f.Skip("mkfs.ext4 not installed (e2fsprogs)")
	}
	dir := f.TempDir()
	tree := filepath.Join(dir, "tree")
	if err := os.MkdirAll(filepath.Join(tree, "etc/ssh"), 0o755); err != nil {
		f.Fatal(err)
	}
	os.WriteFile(filepath.Join(tree, "etc/os-release"), []byte("ID=debian\n"), 0o644)
	os.WriteFile(filepath.Join(tree, "etc/ssh/sshd_config"), []byte("PermitRootLogin no\n"), 0o644)
	os.Symlink("/etc/passwd", filepath.Join(tree, "etc/link"))
	raw := filepath.Join(dir, "base.raw")
	mkfsSize(f, tree, raw, "1M")
	base, err := os.ReadFile(raw)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(uint32(0), []byte("QFI\xfb\x00\x00\x00\x03"))
	f.Add(uint32(1080), []byte{0x53, 0xef})
	f.Add(uint32(1024), []byte{0xff, 0xff, 0xff, 0xff})
	f.Add(uint32(1024+0x18), []byte{0x20})
	f.Add(uint32(4096), []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	f.Add(uint32(510), []byte{0x55, 0xaa})
	f.Fuzz(func(t *testing.T, off uint32, patch []byte) {
		img := append([]byte(nil), base...)
		at := int(off) % len(img)
		copy(img[at:], patch)
		file := filepath.Join(t.TempDir(), "fuzz.img")
		if err := os.WriteFile(file, img, 0o644); err != nil {
			t.Fatal(err)
		}
		im, err := Open(file)
		if err != nil {
			return
		}
		defer im.Close()
		walk(im.FS(), "/", 0)
		im.FS().Glob("/etc/*")
		im.Err()
	})
}

// FuzzQcow2Header feeds the header parser any bytes as the start of a
// file of that size: it must return, with an error or a header whose
// references it can name, and size nothing from the bytes.
func FuzzQcow2Header(f *testing.F) {
	f.Add(header(nil))
	f.Add(header(func(h []byte) { binary.BigEndian.PutUint32(h[36:], 0xffffffff) }))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := parseQcowHeader(data, int64(len(data)))
		if err != nil {
			return
		}
		if h.clusterSize() > 1<<qcowMaxClusterBits || h.l1Size > qcowMaxL1Bytes/8 {
			t.Fatalf("accepted cluster size %d, L1 of %d entries", h.clusterSize(), h.l1Size)
		}
		parseQcowRefs(h, data[:min(int64(len(data)), h.clusterSize())])
	})
}

// fuzzBases are the qcow2 images FuzzQcow2 damages: plain, compressed,
// with extended L2 entries, and a GPT disk, each of a small filesystem.
func fuzzBases(f *testing.F) [][]byte {
	tree := writeTree(f, map[string]string{
		"etc/os-release":      "ID=debian\n",
		"etc/ssh/sshd_config": "PermitRootLogin no\n",
		"etc/fstab":           "LABEL=root / ext4 defaults 0 1\n",
	})
	raw := ext4Of(f, tree, "1M", "-L", "root")
	gptRaw := filepath.Join(f.TempDir(), "gpt.raw")
	toGPT(f, raw, gptRaw)
	var out [][]byte
	for _, q := range []string{convert(f, raw), convert(f, raw, "-c", "-o", "cluster_size=4k"), convert(f, raw, "-o", "extended_l2=on,cluster_size=16k"), convert(f, gptRaw)} {
		out = append(out, readFile(f, q))
	}
	return out
}

// FuzzQcow2 damages a real qcow2 image, a patch at an offset (modulo the
// file's size) of one of the bases, and opens and reads all of it through
// Open: whatever the bytes, it returns with an error or a sound image,
// within the limits.
func FuzzQcow2(f *testing.F) {
	bases := fuzzBases(f)
	f.Add(uint8(0), uint32(36), []byte{0xff, 0xff, 0xff, 0xff})
	f.Add(uint8(1), uint32(20), []byte{0, 0, 0, 21})
	f.Add(uint8(2), uint32(8), []byte{0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 11})
	f.Add(uint8(3), uint32(72), []byte{0, 0, 0, 0, 0, 0, 0, 4})
	f.Fuzz(func(t *testing.T, base uint8, off uint32, patch []byte) {
		img := append([]byte(nil), bases[int(base)%len(bases)]...)
		copy(img[int(off)%len(img):], patch)
		file := filepath.Join(t.TempDir(), "fuzz.qcow2")
		if err := os.WriteFile(file, img, 0o644); err != nil {
			t.Fatal(err)
		}
		im, err := Options{Limits: Limits{MaxBytes: 256 << 20, Deadline: 10 * time.Second}}.Open(t.Context(), file)
		if err != nil {
			return
		}
		defer im.Close()
		walk(im.FS(), "/", 0)
		im.Partitions()
		im.Err()
	})
}

// FuzzPartitionTable reads any bytes as a disk's partition table: every
// table it accepts lies inside the disk and overlaps nothing. With fix
// set, the GPT checksums are made right first, so that mutations reach
// past them.
func FuzzPartitionTable(f *testing.F) {
	f.Add(false, make([]byte, 1024))
	f.Add(true, gptSeed())
	f.Add(false, mbrSeed())
	f.Fuzz(func(t *testing.T, fix bool, data []byte) {
		if fix {
			fixGPT(data)
		}
		size := int64(len(data))
		table, err := readPartitionTable(bytes.NewReader(data), size)
		if err != nil {
			return
		}
		for _, p := range table.Parts {
			if p.Start <= 0 || p.Size <= 0 || p.Start+p.Size > size {
				t.Fatalf("partition %d at %d+%d outside a disk of %d bytes", p.Index, p.Start, p.Size, size)
			}
		}
		if err := table.checkOverlap(); err != nil {
			t.Fatal(err)
		}
	})
}

// fixGPT recomputes the checksums of a GPT header at sector 1 and of the
// entry array it names, where both lie inside data.
func fixGPT(data []byte) {
	if len(data) < 1024 || !bytes.HasPrefix(data[512:], []byte("EFI PART")) {
		return
	}
	le := binary.LittleEndian
	h := data[512:1024]
	at, n := le.Uint64(h[72:]), uint64(le.Uint32(h[80:]))*uint64(le.Uint32(h[84:]))
	if at < uint64(len(data))/512 && n <= uint64(len(data))-at*512 {
		le.PutUint32(h[88:], crc32.ChecksumIEEE(data[at*512:at*512+n]))
	}
	if hs := le.Uint32(h[12:]); hs >= 92 && hs <= 512 {
		clear(h[16:20])
		le.PutUint32(h[16:], crc32.ChecksumIEEE(h[:hs]))
	}
}

// gptSeed is a 16-sector disk with a GPT of 16 entries and two
// partitions: small, for the fuzzer minimizes what it finds byte by byte.
func gptSeed() []byte {
	d := make([]byte, 16*512)
	le := binary.LittleEndian
	copy(d[446:], []byte{0, 0, 2, 0, 0xee, 0xff, 0xff, 0xff, 1, 0, 0, 0, 15, 0, 0, 0})
	d[510], d[511] = 0x55, 0xaa
	h := d[512:]
	copy(h, "EFI PART")
	le.PutUint32(h[8:], 0x00010000)
	le.PutUint32(h[12:], 92)
	le.PutUint64(h[24:], 1)
	le.PutUint64(h[32:], 15)
	le.PutUint64(h[40:], 6)
	le.PutUint64(h[48:], 14)
	le.PutUint64(h[72:], 2)
	le.PutUint32(h[80:], 16)
	le.PutUint32(h[84:], 128)
	for i, p := range [][2]uint64{{6, 9}, {10, 14}} {
		e := d[1024+128*i:]
		copy(e, []byte{0xaf, 0x3d, 0xc6, 0x0f, 0x83, 0x84, 0x72, 0x47, 0x8e, 0x79, 0x3d, 0x69, 0xd8, 0x47, 0x7d, 0xe4})
		e[16] = byte(i + 1)
		le.PutUint64(e[32:], p[0])
		le.PutUint64(e[40:], p[1])
	}
	fixGPT(d)
	return d
}

// mbrSeed is a 16-sector disk with one primary partition and an extended
// one holding two logical partitions.
func mbrSeed() []byte {
	d := make([]byte, 16*512)
	le := binary.LittleEndian
	entry := func(s []byte, i int, typ byte, start, n uint32) {
		e := s[446+16*i:]
		e[4] = typ
		le.PutUint32(e[8:], start)
		le.PutUint32(e[12:], n)
	}
	entry(d, 0, 0x83, 1, 4)
	entry(d, 1, 0x05, 6, 10)
	d[510], d[511] = 0x55, 0xaa
	entry(d[6*512:], 0, 0x83, 1, 3)
	entry(d[6*512:], 1, 0x05, 5, 5)
	d[6*512+510], d[6*512+511] = 0x55, 0xaa
	entry(d[11*512:], 0, 0x83, 1, 4)
	d[11*512+510], d[11*512+511] = 0x55, 0xaa
	return d
}

// TestFuzzSeeds: the seeds of FuzzPartitionTable are tables it accepts,
// so that mutations start from a table, not from noise.
func TestFuzzSeeds(t *testing.T) {
	for _, d := range [][]byte{gptSeed(), mbrSeed()} {
		table, err := readPartitionTable(bytes.NewReader(d), int64(len(d)))
		if err != nil || len(table.Parts) < 2 {
			t.Errorf("seed: %v, %v", table, err)
		}
	}
}
