package diskimage

import (
	"encoding/binary"
	"fmt"
)

// The structure check does what `qemu-img check` does before a guest sees
// a byte: every table and cluster the image references lies inside the
// file and on a cluster boundary, no reserved bit is set, no cluster serves
// both as metadata and as data or as two kinds of metadata, and no cluster
// is referenced more often than its refcount says. A cluster whose refcount
// exceeds its references is a leak, which qemu reports and tolerates: it
// wastes space and misleads no reader. Bitmaps and the data of a LUKS
// header are not walked; their clusters count as leaks.

// Kinds of use of a host cluster, two bits each.
const (
	useNone = iota
	useData
	useL2
	useMeta
)

var useNames = [...]string{"", "data", "an L2 table", "metadata"}

// named is the name of a reference that needs no formatting.
func named(s string) func() string { return func() string { return s } }

// refcounter counts the references to each host cluster of one file.
type refcounter struct {
	q      *qcow2
	counts []uint16
	uses   []byte
}

// add counts a reference of kind use to every cluster n bytes at off
// touch. what names the reference, and is called only for an error: the
// check visits every L2 entry, and a name formatted for each would cost
// more than the check.
func (r *refcounter) add(off uint64, n int64, use int, what func() string) error {
	if n <= 0 {
		return nil
	}
	first, last := off>>r.q.cb, (off+uint64(n)-1)>>r.q.cb
	if last >= uint64(len(r.counts)) {
		return fmt.Errorf("%s at offset %d (%d bytes) lies past the end of the file (%d bytes)", what(), off, n, r.q.size)
	}
	for c := first; c <= last; c++ {
		shift := (c % 4) * 2
		had := int(r.uses[c/4] >> shift & 3)
		switch {
		case had == useNone:
			r.uses[c/4] |= byte(use) << shift
		case had == use && use != useMeta:
		default:
			return fmt.Errorf("the cluster at offset %d is used as %s and as %s (%s)", c<<r.q.cb, useNames[had], useNames[use], what())
		}
		if r.counts[c] < ^uint16(0) {
			r.counts[c]++
		}
	}
	return nil
}

// checkStructure checks q's tables and refcounts. It reads every L2 table
// and refcount block once, and holds two bytes and two bits per cluster of
// the file, reserved from the metadata limit first.
func (q *qcow2) checkStructure() error {
	clusters := (q.size + q.cs - 1) >> q.cb
	mem := clusters*2 + (clusters+3)/4
	if err := q.w.alloc(mem, fmt.Sprintf("checking the refcounts of %d clusters", clusters)); err != nil {
		return err
	}
	defer q.w.free(mem)
	r := &refcounter{q: q, counts: make([]uint16, clusters), uses: make([]byte, (clusters+3)/4)}
	if err := r.add(0, q.cs, useMeta, named("the header")); err != nil {
		return err
	}
	if err := r.add(q.h.l1Offset, int64(q.h.l1Size)*8, useMeta, named("the L1 table")); err != nil {
		return err
	}
	l2buf := make([]byte, q.cs)
	if err := q.walkL1(r, q.l1, l2buf, "the active L1 table"); err != nil {
		return err
	}
	if err := q.walkSnapshots(r, l2buf); err != nil {
		return err
	}
	refTable, err := q.readRefTable(r)
	if err != nil {
		return err
	}
	defer q.w.free(int64(len(refTable)) * 8)
	if q.h.incompat&qcowDirty != 0 {
		// The refcounts of an image left dirty are stale by design; qemu
		// rebuilds them on open, and reads rely on the tables above only.
		return nil
	}
	return q.compareRefcounts(r, refTable, l2buf)
}

// walkL1 counts the L2 tables of l1 and the clusters they map.
func (q *qcow2) walkL1(r *refcounter, l1 []uint64, l2buf []byte, what string) error {
	for i, e := range l1 {
		if e&l1Reserved != 0 {
			return fmt.Errorf("entry %d of %s (0x%016x) has reserved bits set", i, what, e)
		}
		off := e & tableOffsetMask
		if off == 0 {
			continue
		}
		if off%uint64(q.cs) != 0 {
			return fmt.Errorf("entry %d of %s: the L2 table at offset %d is not on a cluster boundary", i, what, off)
		}
		if err := r.add(off, q.cs, useL2, func() string { return fmt.Sprintf("the L2 table of entry %d of %s", i, what) }); err != nil {
			return err
		}
		if err := q.readFull(l2buf, int64(off)); err != nil {
			return err
		}
		if err := q.walkL2(r, l2buf, int64(i)*q.l2n); err != nil {
			return fmt.Errorf("the L2 table at offset %d: %w", off, err)
		}
	}
	return nil
}

// walkL2 checks and counts the entries of one L2 table, whose first entry
// maps guest cluster base.
func (q *qcow2) walkL2(r *refcounter, t []byte, base int64) error {
	for j := range q.l2n {
		var e, bitmap uint64
		if q.ext {
			e, bitmap = binary.BigEndian.Uint64(t[j*16:]), binary.BigEndian.Uint64(t[j*16+8:])
		} else {
			e = binary.BigEndian.Uint64(t[j*8:])
		}
		what := func() string { return fmt.Sprintf("the cluster of guest offset %d", (base+j)<<q.cb) }
		if e&oflagCompressed != 0 {
			if e&oflagCopied != 0 {
				return fmt.Errorf("compressed %s has the copied flag set", what())
			}
			if bitmap != 0 {
				return fmt.Errorf("compressed %s has a subcluster bitmap", what())
			}
			off, size := q.compressedRange(e)
			if off>>56 != 0 || off >= uint64(q.size) {
				return fmt.Errorf("compressed %s at offset %d lies past the end of the file (%d bytes)", what(), off, q.size)
			}
			start := off &^ (compressedSectors - 1)
			if err := r.add(start, size+int64(off-start), useData, func() string { return "compressed " + what() }); err != nil {
				return err
			}
			continue
		}
		reserved := uint64(l2StdReserved)
		if q.ext || q.h.version == 2 {
			reserved |= oflagZero
		}
		if e&reserved != 0 {
			return fmt.Errorf("%s: L2 entry 0x%016x has reserved bits set", what(), e)
		}
		host := e & tableOffsetMask
		if q.ext {
			alloc, zero := uint32(bitmap), uint32(bitmap>>32)
			if alloc&zero != 0 {
				return fmt.Errorf("%s: subclusters both allocated and zero (bitmap 0x%016x)", what(), bitmap)
			}
			if host == 0 && alloc != 0 {
				return fmt.Errorf("%s: allocated subclusters with no host cluster", what())
			}
		}
		if host == 0 {
			if e&oflagCopied != 0 {
				return fmt.Errorf("%s: host offset 0, which only an external data file allows", what())
			}
			continue
		}
		if host%uint64(q.cs) != 0 {
			return fmt.Errorf("%s at offset %d is not on a cluster boundary", what(), host)
		}
		if err := r.add(host, q.cs, useData, what); err != nil {
			return err
		}
	}
	return nil
}

// walkSnapshots checks the snapshot table and counts what each snapshot's
// L1 table maps.
func (q *qcow2) walkSnapshots(r *refcounter, l2buf []byte) error {
	off := int64(q.h.snapshotsOffset)
	start := off
	var fixed [40]byte
	for i := range int(q.h.nbSnapshots) {
		if err := q.readFull(fixed[:], off); err != nil {
			return fmt.Errorf("snapshot %d: %w", i, err)
		}
		be := binary.BigEndian
		l1Off, l1Size := be.Uint64(fixed[0:]), be.Uint32(fixed[8:])
		idLen, nameLen, extra := int64(be.Uint16(fixed[12:])), int64(be.Uint16(fixed[14:])), int64(be.Uint32(fixed[36:]))
		if extra > qcowMaxSnapshotExtra {
			return fmt.Errorf("snapshot %d: %d bytes of extra data, over %d", i, extra, qcowMaxSnapshotExtra)
		}
		off += (40 + extra + idLen + nameLen + 7) &^ 7
		if off-start > qcowMaxSnapshotsBytes {
			return fmt.Errorf("the snapshot table exceeds qemu's limit of %d bytes", qcowMaxSnapshotsBytes)
		}
		what := fmt.Sprintf("the L1 table of snapshot %d", i)
		if l1Size > qcowMaxL1Bytes/8 || l1Off%uint64(q.cs) != 0 || !within(l1Off, uint64(l1Size)*8, q.size) {
			return fmt.Errorf("%s: %d entries at offset %d do not fit the file (%d bytes) on a cluster boundary", what, l1Size, l1Off, q.size)
		}
		if l1Size == 0 {
			continue
		}
		if err := r.add(l1Off, int64(l1Size)*8, useMeta, named(what)); err != nil {
			return err
		}
		l1, err := q.readTable(l1Off, int(l1Size), what)
		if err != nil {
			return err
		}
		err = q.walkL1(r, l1, l2buf, what)
		q.w.free(int64(len(l1)) * 8)
		if err != nil {
			return err
		}
	}
	if q.h.nbSnapshots > 0 {
		// The last entry's padding may lie past the file's end.
		return r.add(uint64(start), off-start, useMeta, named("the snapshot table"))
	}
	return nil
}

// readTable reads n big-endian 64-bit entries at off, reserving their
// memory first; the caller frees it.
func (q *qcow2) readTable(off uint64, n int, what string) ([]uint64, error) {
	if err := q.w.alloc(int64(n)*8, what); err != nil {
		return nil, err
	}
	b := make([]byte, n*8)
	if err := q.readFull(b, int64(off)); err != nil {
		q.w.free(int64(n) * 8)
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	t := make([]uint64, n)
	for i := range t {
		t[i] = binary.BigEndian.Uint64(b[i*8:])
	}
	return t, nil
}

// readRefTable reads the refcount table and counts it and its blocks.
func (q *qcow2) readRefTable(r *refcounter) ([]uint64, error) {
	n := int64(q.h.refTableClusters) * q.cs / 8
	if err := r.add(q.h.refTableOffset, n*8, useMeta, named("the refcount table")); err != nil {
		return nil, err
	}
	t, err := q.readTable(q.h.refTableOffset, int(n), "the refcount table")
	if err != nil {
		return nil, err
	}
	for i, e := range t {
		if e&refTableReserved != 0 || e%uint64(q.cs) != 0 {
			q.w.free(n * 8)
			return nil, fmt.Errorf("entry %d of the refcount table (0x%016x) is not on a cluster boundary", i, e)
		}
		if e == 0 {
			continue
		}
		if err := r.add(e, q.cs, useMeta, func() string { return fmt.Sprintf("refcount block %d", i) }); err != nil {
			q.w.free(n * 8)
			return nil, err
		}
	}
	return t, nil
}

// compareRefcounts reads every refcount block and refuses a cluster that is
// referenced more often than its refcount says.
func (q *qcow2) compareRefcounts(r *refcounter, refTable []uint64, buf []byte) error {
	bits := uint(1) << q.h.refcountOrder
	perBlock := uint64(q.cs) * 8 / uint64(bits)
	clusters := uint64(len(r.counts))
	for c := uint64(0); c < clusters; {
		ti := c / perBlock
		if ti >= uint64(len(refTable)) || refTable[ti] == 0 {
			// No refcount block: every refcount it would hold is 0.
			end := min((ti+1)*perBlock, clusters)
			for ; c < end; c++ {
				if r.counts[c] > 0 {
					return fmt.Errorf("the cluster at offset %d is referenced %d times, but no refcount block covers it", c<<q.cb, r.counts[c])
				}
			}
			continue
		}
		if err := q.readFull(buf, int64(refTable[ti])); err != nil {
			return err
		}
		end := min((ti+1)*perBlock, clusters)
		for ; c < end; c++ {
			stored := refcountAt(buf, c%perBlock, bits)
			if want := uint64(r.counts[c]); stored < want {
				return fmt.Errorf("the cluster at offset %d is referenced %d times, but its refcount is %d", c<<q.cb, want, stored)
			}
		}
	}
	return nil
}

// refcountAt decodes entry i of a refcount block of bits-wide entries:
// big-endian from a byte up, bit 0 the least significant below one.
func refcountAt(b []byte, i uint64, bits uint) uint64 {
	if bits < 8 {
		bit := i * uint64(bits)
		return uint64(b[bit/8]>>(bit%8)) & (1<<bits - 1)
	}
	n := uint64(bits / 8)
	var v uint64
	for _, x := range b[i*n : i*n+n] {
		v = v<<8 | uint64(x)
	}
	return v
}
