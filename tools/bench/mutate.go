package main

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
)

// mutateImages writes n damaged copies of the bases into dir.
func mutateImages(bases []soakBase, dir string, n int) ([]mutation, error) {
	rng := rand.New(rand.NewPCG(15, 1000))
	data := make([][]byte, len(bases))
	for i, b := range bases {
		d, err := os.ReadFile(b.file)
		if err != nil {
			return nil, err
		}
		data[i] = d
	}
	// The sound images come first: each must give exit 1 (the sample tree
	// is weak), or the damaged ones would prove nothing.
	var out []mutation
	for _, b := range bases {
		out = append(out, mutation{File: b.file, What: "sound: " + b.name})
	}
	for i := range n {
		bi := i % len(bases)
		b := bases[bi]
		img, what, damaged := mutate(rng, b, slices.Clone(data[bi]), dir)
		file := filepath.Join(dir, fmt.Sprintf("m%04d-%s.%s", i, b.name, b.format))
		if err := os.WriteFile(file, img, 0o644); err != nil {
			return nil, err
		}
		out = append(out, mutation{File: file, What: what, Damaged: damaged})
	}
	return out, nil
}

// mutate damages img, a copy of base b, and says how and whether the
// damage is one the scanner must refuse.
func mutate(rng *rand.Rand, b soakBase, img []byte, dir string) ([]byte, string, bool) {
	if rng.IntN(8) == 0 {
		n := 1 + rng.IntN(16)
		off := rng.IntN(len(img) - n)
		for i := range n {
			img[off+i] = byte(rng.UintN(256))
		}
		return img, fmt.Sprintf("random bytes: %d at %d", n, off), false
	}
	if b.format == "qcow2" {
		if rng.IntN(3) > 0 {
			return mutateQcow2(rng, img, dir)
		}
		// The filesystem and table lie under the qcow2 mapping; damage
		// them through it, where a cluster is stored uncompressed.
		q := qcowOf(img)
		if what, damaged := mutateDisk(rng, b, q.guest(img)); what != "" {
			return img, what, damaged
		}
		return mutateQcow2(rng, img, dir)
	}
	what, damaged := mutateDisk(rng, b, func(off int64, n int) []byte { return img[off : off+int64(n)] })
	return img, what, damaged
}

var be = binary.BigEndian

// qcowInfo is what the mutations need of a qcow2 header.
type qcowInfo struct {
	cs                         int64
	l1, refTable, l1Size, size int64
	ext                        bool
}

func qcowOf(img []byte) qcowInfo {
	cb := be.Uint32(img[20:])
	return qcowInfo{cs: 1 << cb, l1: int64(be.Uint64(img[40:])), refTable: int64(be.Uint64(img[48:])),
		l1Size: int64(be.Uint32(img[36:])), size: int64(len(img)), ext: be.Uint64(img[72:])&(1<<4) != 0}
}

// l2Entries lists the offsets in img of every L2 entry, and of those that
// map an uncompressed host cluster.
func (q qcowInfo) l2Entries(img []byte) (all, allocated []int64) {
	step := int64(8)
	if q.ext {
		step = 16
	}
	for i := range q.l1Size {
		l2 := int64(be.Uint64(img[q.l1+8*i:]) & 0x00fffffffffffe00)
		if l2 == 0 {
			continue
		}
		for e := l2; e < l2+q.cs; e += step {
			all = append(all, e)
			if v := be.Uint64(img[e:]); v&(1<<62) == 0 && v&0x00fffffffffffe00 != 0 {
				allocated = append(allocated, e)
			}
		}
	}
	return all, allocated
}

func mutateQcow2(rng *rand.Rand, img []byte, dir string) ([]byte, string, bool) {
	q := qcowOf(img)
	put32 := func(off int, v uint32) { be.PutUint32(img[off:], v) }
	put64 := func(off int, v uint64) { be.PutUint64(img[off:], v) }
	past := uint64(q.size+q.cs) &^ uint64(q.cs-1)
	all, allocated := q.l2Entries(img)
	switch rng.IntN(6) {
	case 0: // a header field out of its bounds
		fields := []func() string{
			func() string { put32(4, []uint32{0, 1, 4, 0xffffffff}[rng.IntN(4)]); return "version" },
			func() string { put32(20, []uint32{0, 8, 22, 28, 63}[rng.IntN(5)]); return "cluster_bits" },
			func() string { put32(36, 4194305+rng.Uint32N(1<<31)); return "l1_size" },
			func() string { put64(40, uint64(q.l1)+8); return "l1_table_offset unaligned" },
			func() string { put64(40, past); return "l1_table_offset past the end" },
			func() string { put64(48, uint64(q.refTable)+512); return "refcount_table_offset unaligned" },
			func() string { put32(56, 0); return "refcount_table_clusters 0" },
			func() string { put32(56, 1<<24); return "refcount_table_clusters huge" },
			func() string { put32(60, 65537+rng.Uint32N(1<<20)); return "nb_snapshots" },
			func() string { put32(60, 1000); put64(64, past); return "snapshots past the end" },
			func() string { put64(72, 1<<(5+rng.IntN(59))); return "unknown incompatible bit" },
			func() string { put64(72, 2); return "corrupt bit" },
			func() string { put64(72, 4); return "external data file bit" },
			func() string { put32(96, 7+rng.Uint32N(100)); return "refcount_order" },
			func() string {
				put32(100, []uint32{0, 72, 100, 108, uint32(q.cs) + 8}[rng.IntN(5)])
				return "header_length"
			},
			func() string { put32(32, 1+rng.Uint32N(2)); return "crypt_method" },
			func() string {
				put64(24, uint64(q.l1Size)*uint64(q.cs/8)*uint64(q.cs)+1+rng.Uint64N(1<<40))
				return "size past the L1 table"
			},
		}
		return img, "qcow2 header: " + fields[rng.IntN(len(fields))](), true
	case 1: // a backing file naming the canary
		name := []string{filepath.Join(dir, "canary.raw"), "canary.raw", "../" + filepath.Base(dir) + "/canary.raw"}[rng.IntN(3)]
		at := 1024
		copy(img[at:], name)
		put64(8, uint64(at))
		put32(16, uint32(len(name)))
		// The header extensions end before the name.
		return img, "qcow2 backing file: " + name, true
	case 2: // an L1 entry, never to 0, which leaves the range unallocated
		i := q.l1 + 8*rng.Int64N(max(q.l1Size, 1))
		v := []uint64{past, 1<<63 | past, 1<<63 | uint64(q.refTable), 1<<63 | uint64(q.l1), be.Uint64(img[i:]) + 512, be.Uint64(img[i:]) | 1<<56}[rng.IntN(6)]
		put64(int(i), v)
		return img, fmt.Sprintf("qcow2 L1 entry: 0x%x", v), true
	case 3: // an L2 entry
		if len(all) == 0 {
			return mutateQcow2(rng, img, dir)
		}
		e := all[rng.IntN(len(all))]
		choices := []uint64{1<<63 | past, 1<<63 | uint64(q.l1), 1<<63 | uint64(q.refTable), 1 << 63, 1<<62 | past<<1}
		if len(allocated) > 0 {
			other := be.Uint64(img[allocated[rng.IntN(len(allocated))]:]) & 0x00fffffffffffe00
			if other != be.Uint64(img[e:])&0x00fffffffffffe00 {
				choices = append(choices, 1<<63|other, 1<<63|other+512)
			}
		}
		v := choices[rng.IntN(len(choices))]
		put64(int(e), v)
		return img, fmt.Sprintf("qcow2 L2 entry: 0x%x", v), true
	case 4: // a refcount of an allocated cluster set to 0
		if len(allocated) == 0 {
			return mutateQcow2(rng, img, dir)
		}
		host := int64(be.Uint64(img[allocated[rng.IntN(len(allocated))]:]) & 0x00fffffffffffe00)
		order := be.Uint32(img[96:])
		if order != 4 {
			return mutateQcow2(rng, img, dir)
		}
		block := int64(be.Uint64(img[q.refTable:]))
		if at := block + 2*(host/q.cs); at+2 <= min(block+q.cs, q.size) {
			img[at], img[at+1] = 0, 0
			return img, "qcow2 refcount: 0 for a data cluster", true
		}
		return mutateQcow2(rng, img, dir)
	default: // the file cut short by at least a cluster past its last full one
		n := (len(img) % int(q.cs)) + int(q.cs)*(1+rng.IntN(3))
		return img[:len(img)-n], fmt.Sprintf("qcow2 truncated: %d bytes cut", n), true
	}
}

// guest returns a view of the guest disk of a qcow2 for writing: the host
// bytes of n bytes at a guest offset, nil where they are not stored in one
// uncompressed cluster.
func (q qcowInfo) guest(img []byte) func(off int64, n int) []byte {
	l2n, step := q.cs/8, int64(8)
	if q.ext {
		l2n, step = q.cs/16, 16
	}
	host := func(guest int64) int64 {
		vc := guest / q.cs
		if vc/l2n >= q.l1Size {
			return -1
		}
		l2 := int64(be.Uint64(img[q.l1+8*(vc/l2n):]) & 0x00fffffffffffe00)
		if l2 == 0 {
			return -1
		}
		e := be.Uint64(img[l2+step*(vc%l2n):])
		if e&(1<<62) != 0 || e&0x00fffffffffffe00 == 0 {
			return -1
		}
		return int64(e&0x00fffffffffffe00) + guest%q.cs
	}
	return func(off int64, n int) []byte {
		h := host(off)
		if h < 0 || host(off+int64(n)-1) != h+int64(n)-1 || h+int64(n) > int64(len(img)) {
			return nil
		}
		return img[h : h+int64(n)]
	}
}

// mutateDisk damages the partition table or the ext4 filesystem of a disk
// whose bytes at gives; "" when they are not where it can write them.
func mutateDisk(rng *rand.Rand, b soakBase, at func(off int64, n int) []byte) (string, bool) {
	if b.gpt && rng.IntN(2) == 0 {
		return mutateGPT(rng, at)
	}
	return mutateExt4(rng, at, b.fsAt)
}

// mutateGPT damages the GPT header or its first entry, with the checksums
// made right again, so that the damage is what the check must see.
func mutateGPT(rng *rand.Rand, at func(int64, int) []byte) (string, bool) {
	h, array := at(512, 512), at(1024, 128*128)
	if h == nil || array == nil {
		return "", false
	}
	le := binary.LittleEndian
	var what string
	switch rng.IntN(8) {
	case 0:
		le.PutUint32(h[80:], 4097+rng.Uint32N(1<<31))
		what = "GPT entry count"
	case 1:
		le.PutUint32(h[84:], []uint32{0, 64, 127, 129, 1 << 20}[rng.IntN(5)])
		what = "GPT entry size"
	case 2:
		le.PutUint64(h[48:], le.Uint64(h[32:])+1+rng.Uint64N(1<<20))
		what = "GPT last usable past the disk"
	case 3:
		le.PutUint64(h[72:], []uint64{0, 1, le.Uint64(h[40:])}[rng.IntN(3)])
		what = "GPT entry array location"
	case 4:
		le.PutUint64(array[40:], le.Uint64(h[48:])+1+rng.Uint64N(1<<20))
		what = "GPT partition end past the usable sectors"
	case 5:
		le.PutUint64(array[32:], rng.Uint64N(le.Uint64(h[40:])))
		what = "GPT partition start before the usable sectors"
	case 6:
		// A second partition over the first.
		copy(array[128:], array[:128])
		array[128+16]++
		what = "GPT overlapping partitions"
	default:
		h[16]++
		return "GPT header checksum", true
	}
	le.PutUint32(h[88:], crc32.ChecksumIEEE(array))
	clear(h[16:20])
	le.PutUint32(h[16:], crc32.ChecksumIEEE(h[:92]))
	return what, true
}

// mutateExt4 damages a superblock field or the root inode of the
// filesystem at fsAt.
func mutateExt4(rng *rand.Rand, at func(int64, int) []byte, fsAt int64) (string, bool) {
	sb := at(fsAt+1024, 1024)
	if sb == nil {
		return "", false
	}
	le := binary.LittleEndian
	bs := int64(1024) << le.Uint32(sb[0x18:])
	switch rng.IntN(10) {
	case 0:
		le.PutUint32(sb[0x18:], 7+rng.Uint32N(20))
		return "ext4 superblock: block size", true
	case 1:
		le.PutUint32(sb[0x20:], []uint32{0, 7, uint32(8*bs) + 1}[rng.IntN(3)])
		return "ext4 superblock: blocks per group", true
	case 2:
		le.PutUint32(sb[0x28:], uint32(8*bs)+1+rng.Uint32N(1000))
		return "ext4 superblock: inodes per group", true
	case 3:
		le.PutUint16(sb[0x58:], []uint16{0, 100, 129, 384, uint16(min(2*bs, 65535))}[rng.IntN(5)])
		return "ext4 superblock: inode size", true
	case 4:
		le.PutUint32(sb[0x4c:], 2+rng.Uint32N(100))
		return "ext4 superblock: revision", true
	case 5:
		le.PutUint32(sb[0x0:], le.Uint32(sb[0x0:])+1+rng.Uint32N(1000))
		return "ext4 superblock: inodes count", true
	case 6:
		le.PutUint32(sb[0x4:], le.Uint32(sb[0x4:])*2+rng.Uint32N(1000))
		return "ext4 superblock: blocks past the device", true
	case 7:
		le.PutUint32(sb[0x60:], le.Uint32(sb[0x60:])|[]uint32{0x1, 0x4, 0x8, 0x1000, 1 << 20}[rng.IntN(5)])
		return "ext4 superblock: incompatible feature", true
	case 8:
		le.PutUint32(sb[0x14:], le.Uint32(sb[0x4:])+rng.Uint32N(10))
		return "ext4 superblock: first data block", true
	default:
		// The root inode: inode 2 of group 0's inode table.
		gd := at(fsAt+(int64(le.Uint32(sb[0x14:]))+1)*bs, 64)
		if gd == nil {
			return "", false
		}
		table := int64(le.Uint32(gd[8:]))
		ino := at(fsAt+table*bs+int64(le.Uint16(sb[0x58:])), 2)
		if ino == nil {
			return "", false
		}
		le.PutUint16(ino, []uint16{0x8000, 0xa000, 0x1000, 0}[rng.IntN(4)]|0o644)
		return "ext4 root inode: not a directory", true
	}
}
