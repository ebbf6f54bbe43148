package diskimage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// header is a valid version 3 header of 64 KiB clusters mapping 1 GiB,
// with its tables inside a file of fileSize bytes; patch changes fields.
func header(patch func(h []byte)) []byte {
	h := make([]byte, 112)
	copy(h, "QFI\xfb")
	be := binary.BigEndian
	be.PutUint32(h[4:], 3)
	be.PutUint32(h[20:], 16)
	be.PutUint64(h[24:], 1<<30)
	be.PutUint32(h[36:], 2)
	be.PutUint64(h[40:], 3<<16)
	be.PutUint64(h[48:], 1<<16)
	be.PutUint32(h[56:], 1)
	be.PutUint32(h[96:], 4)
	be.PutUint32(h[100:], 112)
	if patch != nil {
		patch(h)
	}
	return h
}

const headerFileSize = 1 << 40

// TestQcowHeaderLimits checks every header limit at its value and just
// past it.
func TestQcowHeaderLimits(t *testing.T) {
	be := binary.BigEndian
	u32 := func(off int, v uint32) func([]byte) { return func(h []byte) { be.PutUint32(h[off:], v) } }
	u64 := func(off int, v uint64) func([]byte) { return func(h []byte) { be.PutUint64(h[off:], v) } }
	both := func(fs ...func([]byte)) func([]byte) {
		return func(h []byte) {
			for _, f := range fs {
				f(h)
			}
		}
	}
	cases := []struct {
		name     string
		at, past func([]byte)
		fileSize int64
		err      string
	}{
		{"cluster_bits low", both(u32(20, 9), u64(24, 1<<16)), both(u32(20, 8), u64(24, 1<<16)), headerFileSize, "cluster_bits 8 outside 9..21"},
		{"cluster_bits high", both(u32(20, 21), u64(40, 3<<21), u64(48, 1<<21)), both(u32(20, 22), u64(40, 3<<22), u64(48, 1<<22)), headerFileSize, "cluster_bits 22 outside 9..21"},
		{"version", u32(4, 2), u32(4, 4), headerFileSize, "version 4, want 2 or 3"},
		{"l1_size", u32(36, qcowMaxL1Bytes/8), u32(36, qcowMaxL1Bytes/8+1), headerFileSize, "L1 table of 4194305 entries over qemu's limit of 4194304"},
		{"L1 inside the file", nil, nil, 3<<16 + 16, ""},
		{"L1 past the file", u32(36, 2), u32(36, 3), 3<<16 + 16, "L1 table of 3 entries at offset 196608 exceeds the file (196624 bytes)"},
		{"virtual size", u64(24, 2<<29), u64(24, 2<<29+1), headerFileSize, "virtual size 1073741825 exceeds the 1073741824 bytes its L1 table of 2 entries maps"},
		{"refcount table", u32(56, qcowMaxRefTableBytes>>16), u32(56, qcowMaxRefTableBytes>>16+1), headerFileSize, "refcount table of 129 clusters: want 1 to 128"},
		{"refcount table in the file", nil, u64(48, 1<<40-1<<16+1<<16), headerFileSize, "refcount table of 1 clusters at offset 1099511627776 exceeds the file"},
		{"refcount table alignment", nil, u64(48, 1<<16+512), headerFileSize, "refcount_table_offset 66048 is not a cluster boundary"},
		{"refcount_order", u32(96, 6), u32(96, 7), headerFileSize, "refcount_order 7 over 6"},
		{"nb_snapshots", both(u32(60, qcowMaxSnapshots), u64(64, 4<<16)), both(u32(60, qcowMaxSnapshots+1), u64(64, 4<<16)), headerFileSize, "nb_snapshots 65537 over qemu's limit of 65536"},
		{"snapshots in the file", both(u32(60, 10), u64(64, 4<<16)), both(u32(60, 11), u64(64, 4<<16)), 4<<16 + 400, "11 snapshots at offset 262144 exceed the file"},
		{"header_length low", u32(100, 104), u32(100, 96), headerFileSize, "header_length 96: want a multiple of 8 from 104 to the cluster size"},
		{"header_length odd", nil, u32(100, 108), headerFileSize, "header_length 108"},
		{"header_length high", u32(100, 1<<16), u32(100, 1<<16+8), headerFileSize, "header_length 65544"},
		{"backing name", both(u64(8, 512), u32(16, qcowMaxBackingName)), both(u64(8, 512), u32(16, qcowMaxBackingName+1)), headerFileSize, "backing file name of 1024 bytes: want 1 to 1023"},
		{"backing name in the header cluster", both(u64(8, 1<<16-10), u32(16, 10)), both(u64(8, 1<<16-10), u32(16, 11)), headerFileSize, "lies outside the header cluster"},
		{"incompatible features", u64(72, qcowDirty), u64(72, 1<<5), headerFileSize, "unknown incompatible features 0x20"},
		{"corrupt bit", nil, u64(72, qcowCorrupt), headerFileSize, "marked corrupt"},
		{"extended L2 cluster size", both(u64(72, qcowExtendedL2), u32(20, 14), u64(40, 3<<14), u64(48, 1<<14), u32(36, 64)), both(u64(72, qcowExtendedL2), u32(20, 13), u64(40, 3<<13), u64(48, 1<<13), u32(36, 64)), headerFileSize, "extended L2 entries with cluster_bits 13"},
		{"compression type", both(u64(72, qcowCompression), func(h []byte) { h[104] = 1 }), func(h []byte) { h[104] = 1 }, headerFileSize, "compression_type 1 disagrees"},
		{"encryption", nil, u32(32, 2), headerFileSize, "encrypted (crypt_method 2)"},
		{"L1 alignment", nil, u64(40, 3<<16+8), headerFileSize, "l1_table_offset 196616 is not a cluster boundary"},
		{"short file", nil, nil, 100, "header_length 112 exceeds the file (100 bytes)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.at != nil || c.past != nil || c.err == "" {
				if _, err := parseQcowHeader(header(c.at), c.fileSize); err != nil {
					t.Errorf("at the limit: %v", err)
				}
			}
			if c.err == "" {
				return
			}
			fs := c.fileSize
			_, err := parseQcowHeader(header(c.past), fs)
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("past the limit: %v, want %q", err, c.err)
			}
		})
	}
}

// TestTinyCraftedQcow2 is a 1 KiB file whose header asked go-qcow2reader
// for a 32 GiB L1 table, which aborted the process with "out of memory".
// Its corpus entry is testdata/fuzz/FuzzQcow2Header/l1-size-4g.
func TestTinyCraftedQcow2(t *testing.T) {
	data := make([]byte, 1024)
	copy(data, header(func(h []byte) { binary.BigEndian.PutUint32(h[36:], 0xffffffff) }))
	file := writeFile(t, t.TempDir(), "tiny.qcow2", data)
	start := time.Now()
	mustFail(t, Options{}, file, "L1 table of 4294967295 entries over qemu's limit")
	if d := time.Since(start); d > time.Second {
		t.Errorf("took %s", d)
	}
}

// contents reads every regular file under dir.
func contents(t *testing.T, fsys sysroot.FS) map[string]string {
	t.Helper()
	out := map[string]string{}
	var visit func(dir string, depth int)
	visit = func(dir string, depth int) {
		entries, err := fsys.ReadDir(dir)
		if err != nil {
			t.Fatalf("ReadDir %s: %v", dir, err)
		}
		for _, e := range entries {
			p := strings.TrimSuffix(dir, "/") + "/" + e.Name()
			switch {
			case e.IsDir():
				visit(p, depth+1)
			case e.Type().IsRegular():
				b, err := fsys.ReadFile(p)
				if err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				out[p] = string(b)
			}
		}
	}
	visit("/", 0)
	return out
}

func sampleTree(t *testing.T) string {
	files := map[string]string{"etc/os-release": "ID=debian\n", "etc/ssh/sshd_config": "PermitRootLogin no\n"}
	for i := range 40 {
		files[fmt.Sprintf("data/f%02d", i)] = strings.Repeat(fmt.Sprintf("line %d of a file that compresses\n", i), 300*i)
	}
	return writeTree(t, files)
}

// TestQcow2Variants reads the same filesystem through every qcow2 layout
// qemu-img writes, and wants the raw image's bytes back.
func TestQcow2Variants(t *testing.T) {
	raw := ext4Of(t, sampleTree(t), "16M")
	base, err := Open(raw)
	if err != nil {
		t.Fatal(err)
	}
	want := contents(t, base.FS())
	base.Close()
	snap := convert(t, raw)
	qemuImg(t, "snapshot", "-c", "one", snap)
	qemuImg(t, "snapshot", "-c", "two", snap)
	for name, file := range map[string]string{
		"plain":            convert(t, raw),
		"v2":               convert(t, raw, "-o", "compat=0.10"),
		"zlib":             convert(t, raw, "-c"),
		"zstd":             convert(t, raw, "-c", "-o", "compression_type=zstd"),
		"512-byte":         convert(t, raw, "-o", "cluster_size=512"),
		"2M compressed":    convert(t, raw, "-c", "-o", "cluster_size=2M"),
		"extended L2":      convert(t, raw, "-o", "extended_l2=on"),
		"refcount bits 1":  convert(t, raw, "-o", "refcount_bits=1"),
		"refcount bits 64": convert(t, raw, "-o", "refcount_bits=64"),
		"snapshots":        snap,
	} {
		t.Run(name, func(t *testing.T) {
			im, err := Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer im.Close()
			got := contents(t, im.FS())
			if len(got) != len(want) {
				t.Errorf("%d files, the raw image has %d", len(got), len(want))
			}
			for p, w := range want {
				if got[p] != w {
					t.Errorf("%s differs from the raw image's", p)
				}
			}
			if err := im.Err(); err != nil {
				t.Error(err)
			}
		})
	}
}

// TestInflateOnce reads a compressed image twice: the second pass inflates
// nothing, and no cluster is inflated more often than there are clusters.
func TestInflateOnce(t *testing.T) {
	raw := ext4Of(t, sampleTree(t), "16M")
	file := convert(t, raw, "-c")
	im, err := Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	contents(t, im.FS())
	first := im.chain.w.inflated
	spent := im.Spent()
	contents(t, im.FS())
	if im.chain.w.inflated != first {
		t.Errorf("the second read inflated %d clusters more", im.chain.w.inflated-first)
	}
	if clusters := 16 << 20 >> 16; first == 0 || first > clusters {
		t.Errorf("%d clusters inflated for a disk of %d", first, clusters)
	}
	t.Logf("%d clusters inflated, %d bytes read or inflated in the first pass", first, spent)
}

// TestCompressedBigClusters is the shape of image on which go-qcow2reader
// inflated up to a whole cluster again for every small read: 2 MiB
// compressed clusters under a filesystem of 1 KiB blocks and thousands of
// small files. Inflating each cluster once, it reads about as fast as the
// raw image.
func TestCompressedBigClusters(t *testing.T) {
	files := map[string]string{"etc/os-release": "ID=debian\n", "etc/ssh/sshd_config": "PermitRootLogin no\n"}
	for i := range 2000 {
		files[fmt.Sprintf("etc/default/grub.d/f%d.cfg", i)] = fmt.Sprintf("GRUB_CMDLINE_LINUX_DEFAULT=\"x%d\"\n", i)
	}
	raw := ext4Of(t, writeTree(t, files), "32M", "-b", "1024", "-N", "2200")
	file := convert(t, raw, "-c", "-o", "cluster_size=2M")
	start := time.Now()
	im, err := Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	m, err := im.FS().Glob("/etc/default/grub.d/*.cfg")
	if err != nil || len(m) != 2000 {
		t.Fatalf("glob: %d, %v", len(m), err)
	}
	for _, p := range m {
		if _, err := im.FS().ReadFile(p); err != nil {
			t.Fatal(err)
		}
	}
	d := time.Since(start)
	if clusters := 32 << 20 >> 21; im.chain.w.inflated > 4*clusters {
		t.Errorf("%d inflations of %d clusters", im.chain.w.inflated, clusters)
	}
	if d > 20*time.Second {
		t.Errorf("took %s", d)
	}
	t.Logf("%s for 2000 files; %d inflations; %d bytes read or inflated", d, im.chain.w.inflated, im.Spent())
}

// TestByteBudget opens and reads an image with a budget of exactly what it
// costs, then one byte less.
func TestByteBudget(t *testing.T) {
	file := convert(t, ext4Of(t, sampleTree(t), "16M"), "-c")
	cost := func(o Options) (int64, error) {
		im, err := o.Open(t.Context(), file)
		if err != nil {
			return 0, err
		}
		defer im.Close()
		walk(im.FS(), "/", 0)
		return im.Spent(), im.Err()
	}
	need, err := cost(Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cost(Options{Limits: Limits{MaxBytes: need}}); err != nil {
		t.Errorf("at the budget of %d bytes: %v", need, err)
	}
	_, err = cost(Options{Limits: Limits{MaxBytes: need - 1}})
	if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), fmt.Sprintf("more than %d bytes read or inflated, the byte budget", need-1)) || !strings.Contains(err.Error(), file) {
		t.Errorf("past the budget: %v", err)
	}
}

// TestDeadline: a scan that outlives its deadline ends with an error
// naming it.
func TestDeadline(t *testing.T) {
	file := convert(t, ext4Of(t, sampleTree(t), "16M"), "-c")
	mustRead(t, Options{Limits: Limits{Deadline: time.Minute}}, file, "no")
	err := mustFail(t, Options{Limits: Limits{Deadline: time.Nanosecond}}, file, "ran past its deadline of 1ns")
	if !errors.Is(err, ErrLimit) {
		t.Errorf("%v does not wrap ErrLimit", err)
	}
}

// TestMetadataLimit finds the least metadata memory an image opens with,
// and wants one byte less refused.
func TestMetadataLimit(t *testing.T) {
	file := convert(t, ext4Of(t, sampleTree(t), "16M"), "-o", "cluster_size=512")
	opens := func(n int64) error {
		im, err := Options{Limits: Limits{MaxMetadata: n}}.Open(t.Context(), file)
		if err == nil {
			im.Close()
		}
		return err
	}
	lo, hi := int64(1), int64(64<<20)
	if err := opens(hi); err != nil {
		t.Fatal(err)
	}
	for lo < hi {
		mid := (lo + hi) / 2
		if opens(mid) == nil {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	err := mustFail(t, Options{Limits: Limits{MaxMetadata: lo - 1}}, file, "of memory, over the")
	if !errors.Is(err, ErrLimit) {
		t.Errorf("%v does not wrap ErrLimit", err)
	}
	t.Logf("opens with %d bytes of metadata", lo)
}

// TestReadsAtTheEnd: a read at or past the virtual size is io.EOF, and
// one ending at it is whole, for raw and qcow2 alike.
func TestReadsAtTheEnd(t *testing.T) {
	raw := ext4Of(t, sampleTree(t), "16M")
	for _, file := range []string{raw, convert(t, raw)} {
		im, err := Open(file)
		if err != nil {
			t.Fatal(err)
		}
		size := im.disk.size
		p := make([]byte, 512)
		if n, err := im.disk.ReadAt(p, size-512); n != 512 || (err != nil && err != io.EOF) {
			t.Errorf("%s: the last sector: %d, %v", file, n, err)
		}
		if n, err := im.disk.ReadAt(p, size); n != 0 || err != io.EOF {
			t.Errorf("%s: at the end: %d, %v", file, n, err)
		}
		if n, err := im.disk.ReadAt(p, size-100); n != 100 || err != io.EOF {
			t.Errorf("%s: across the end: %d, %v", file, n, err)
		}
		if err := im.Err(); err != nil {
			t.Errorf("%s: reads at the end count as damage: %v", file, err)
		}
		im.Close()
	}
}

// TestQcow2Damage corrupts structures of a real qcow2 where no read of the
// filesystem would look, and wants each refused on open.
func TestQcow2Damage(t *testing.T) {
	file := convert(t, ext4Of(t, sampleTree(t), "16M"))
	data := readFile(t, file)
	h, err := parseQcowHeader(data, int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	cs := h.clusterSize()
	l1 := binary.BigEndian.Uint64(data[h.l1Offset:]) & tableOffsetMask
	refTable := binary.BigEndian.Uint64(data[h.refTableOffset:])
	// The last L2 entry maps the disk's last cluster, which holds no data.
	last := int64(l1) + cs - 8
	if binary.BigEndian.Uint64(data[last:]) != 0 {
		t.Fatal("the last guest cluster is allocated")
	}
	firstData := int64(-1)
	for i := int64(0); i < cs/8; i++ {
		if e := binary.BigEndian.Uint64(data[int64(l1)+8*i:]); e&tableOffsetMask != 0 {
			firstData = int64(e & tableOffsetMask)
			break
		}
	}
	for name, c := range map[string]struct {
		patch map[int64][]byte
		err   string
	}{
		"cluster past the end":      {map[int64][]byte{last: be64(1<<63 | uint64(len(data)+int(cs))&^uint64(cs-1))}, "lies past the end of the file"},
		"unaligned cluster":         {map[int64][]byte{last: be64(1<<63 | uint64(firstData) + 512)}, "is not on a cluster boundary"},
		"reserved bits":             {map[int64][]byte{last: be64(1<<63 | uint64(firstData) | 2)}, "reserved bits set"},
		"data on the L1 table":      {map[int64][]byte{last: be64(1<<63 | h.l1Offset)}, "is used as metadata and as data"},
		"data used twice":           {map[int64][]byte{last: be64(1<<63 | uint64(firstData))}, "referenced 2 times, but its refcount is 1"},
		"refcount zero":             {map[int64][]byte{int64(refTable) + 2*(firstData/cs): {0, 0}}, "referenced 1 times, but its refcount is 0"},
		"L1 reserved bits":          {map[int64][]byte{int64(h.l1Offset): be64(l1 | 1<<56)}, "entry 0 of the active L1 table"},
		"L2 past the end":           {map[int64][]byte{int64(h.l1Offset): be64((uint64(len(data)) + uint64(cs)) &^ uint64(cs-1))}, "past the end of the file"},
		"refcount table unaligned":  {map[int64][]byte{int64(h.refTableOffset): be64(refTable + 8)}, "not on a cluster boundary"},
		"compressed past the end":   {map[int64][]byte{last: be64(compressedEntry(h.clusterBits, uint64(len(data))+4096, 100))}, "lies past the end of the file"},
		"refcount block on the L2":  {map[int64][]byte{int64(h.refTableOffset): be64(l1)}, "is used as"},
		"external data file bit":    {map[int64][]byte{72: be64(qcowExternalData)}, "external data file"},
		"unknown incompatible flag": {map[int64][]byte{72: be64(1 << 40)}, "unknown incompatible features"},
	} {
		t.Run(name, func(t *testing.T) {
			mustFail(t, Options{}, patched(t, file, c.patch), c.err)
		})
	}
}

// TestBacking: a qcow2 naming a backing file, absolute or relative, is
// refused without the file being opened; with --allow-backing a chain
// inside the directory reads, and every way out of it is refused.
func TestBacking(t *testing.T) {
	dir := t.TempDir()
	c := newCanary(t, dir)
	raw := ext4Of(t, osTree(t, "base", nil), "8M")
	base := filepath.Join(dir, "base.raw")
	if err := os.Rename(raw, base); err != nil {
		t.Fatal(err)
	}
	overlay := func(name, backing, format string) string {
		p := filepath.Join(dir, name)
		qemuImg(t, "create", "-q", "-f", "qcow2", "-u", "-b", backing, "-F", format, p, "8M")
		return p
	}
	abs := overlay("abs.qcow2", c.path, "raw")
	rel := overlay("rel.qcow2", "canary.raw", "raw")
	up := overlay("sub-up.qcow2", "../"+filepath.Base(dir)+"/canary.raw", "raw")
	for _, f := range []string{abs, rel, up} {
		err := mustFail(t, Options{}, f, "names the backing file", "backing files are refused", "unless a directory holds the whole chain")
		if !errors.Is(err, errReference) {
			t.Errorf("%v does not wrap errReference", err)
		}
	}
	c.untouched(t)

	// A chain inside the allowed directory: top -> mid -> base.raw.
	allowed := Options{AllowBacking: dir}
	mid := overlay("mid.qcow2", "base.raw", "raw")
	top := overlay("top.qcow2", "mid.qcow2", "qcow2")
	mustRead(t, allowed, top, "base")
	mustRead(t, Options{AllowBacking: dir + "/."}, top, "base")

	outside := t.TempDir()
	if err := os.Symlink(c.path, filepath.Join(dir, "link.raw")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, filepath.Join(outside, "loopdir")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "dirlink")); err != nil {
		t.Fatal(err)
	}
	os.Link(base, filepath.Join(dir, "real", "base.raw"))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo.raw"), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		backing, format, dir, err string
	}{
		"symlink":             {"link.raw", "raw", dir, "is a symbolic link"},
		"directory symlink":   {"dirlink/base.raw", "raw", dir, "is a symbolic link or not a directory"},
		"escape":              {"../escape.raw", "raw", dir, "lies outside the backing files' directory"},
		"absolute outside":    {"/etc/passwd", "raw", dir, "lies outside the backing files' directory"},
		"fifo":                {"fifo.raw", "raw", dir, "not a regular file"},
		"directory":           {"real", "raw", dir, "not a regular file"},
		"missing":             {"nope.raw", "raw", dir, "no such file"},
		"unknown format":      {"base.raw", "vmdk", dir, "only qcow2 and raw"},
		"qcow2 without magic": {"base.raw", "qcow2", dir, "no qcow2 magic"},
	} {
		t.Run(name, func(t *testing.T) {
			f := overlay(strings.ReplaceAll(name, " ", "-")+".qcow2", c.backing, c.format)
			mustFail(t, Options{AllowBacking: c.dir}, f, c.err)
		})
	}
	t.Run("loop", func(t *testing.T) {
		f := overlay("loop.qcow2", "loop2.qcow2", "qcow2")
		overlay("loop2.qcow2", "loop.qcow2", "qcow2")
		mustFail(t, allowed, f, "appears twice in its backing chain")
	})
	t.Run("too deep", func(t *testing.T) {
		prev := "base.raw"
		format := "raw"
		for i := range maxChain {
			name := fmt.Sprintf("deep%d.qcow2", i)
			overlay(name, prev, format)
			prev, format = name, "qcow2"
		}
		mustFail(t, allowed, filepath.Join(dir, prev), "deeper than 8 files")
		mustRead(t, allowed, filepath.Join(dir, fmt.Sprintf("deep%d.qcow2", maxChain-2)), "base")
	})
	_ = mid
	c.untouched(t)
}

// TestExternalDataFile: qemu-img's data_file option stores the clusters
// in another file; such an image is refused naming it.
func TestExternalDataFile(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "ext.qcow2")
	qemuImg(t, "create", "-q", "-f", "qcow2", "-o", "data_file="+filepath.Join(dir, "data.raw"), f, "8M")
	err := mustFail(t, Options{AllowBacking: dir}, f, "external data file", "data.raw")
	if !errors.Is(err, errReference) {
		t.Errorf("%v does not wrap errReference", err)
	}
}

// TestHandBuiltQcow2 reads layouts built by hand, which qemu-img check
// accepts, and refuses their damaged forms.
func TestHandBuiltQcow2(t *testing.T) {
	const cb = 16
	zeros := make([]byte, 1<<cb)
	blob := rawDeflate(t, bytes.Repeat([]byte("gpuhost "), 1<<cb/8))
	l := &qcowLayout{clusterBits: cb, size: 8 << 20, data: append(blob, zeros[:512]...)}
	l.l2 = []uint64{compressedEntry(cb, 5<<cb, len(blob)), compressedEntry(cb, 5<<cb, len(blob))}
	// Two guest clusters share one compressed blob, as qemu allows with a
	// refcount of 2.
	l.refcounts = map[int]uint16{5: 2}
	dir := t.TempDir()
	good := writeFile(t, dir, "good.qcow2", l.bytes())
	qemuImg(t, "check", good)
	d := rawOrQcow(t, good)
	p := make([]byte, 2<<cb)
	if _, err := d.ReadAt(p, 0); err != nil || !bytes.Equal(p, bytes.Repeat([]byte("gpuhost "), 2<<cb/8)) {
		t.Errorf("shared compressed blob: %v", err)
	}

	l.refcounts = map[int]uint16{5: 1}
	mustFail(t, Options{}, writeFile(t, dir, "shared.qcow2", l.bytes()), "referenced 2 times, but its refcount is 1")

	short := rawDeflate(t, make([]byte, 1<<cb-1))
	l = &qcowLayout{clusterBits: cb, size: 8 << 20, data: short, l2: []uint64{compressedEntry(cb, 5<<cb, len(short))}}
	f := writeFile(t, dir, "short.qcow2", l.bytes())
	if _, err := rawOrQcow(t, f).ReadAt(p[:512], 0); err == nil || !strings.Contains(err.Error(), "inflates to less than the cluster size") {
		t.Errorf("a cluster inflating short: %v", err)
	}
}

// rawOrQcow opens the virtual disk of file alone, with no filesystem.
func rawOrQcow(t *testing.T, file string) virtualDisk {
	t.Helper()
	c := &chain{w: newWork(t.Context(), Limits{})}
	t.Cleanup(c.close)
	h, err := c.openTop(file)
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := c.openDisk(h, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
