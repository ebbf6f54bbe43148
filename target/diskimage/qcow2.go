package diskimage

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// The qcow2 reader is this package's own (the format is docs/interop/qcow2.txt
// in the qemu source). Every field of the header is checked against the
// spec's and qemu's limits and against the file's real size before anything
// is allocated from it, the structure is checked as `qemu-img check` does
// before a byte of the virtual disk is read, backing files are opened only
// inside the directory the caller allows, and each compressed cluster is
// inflated once, to exactly one cluster.

// qemu's limits, which a valid image meets: qemu opens nothing past them.
const (
	qcowMinClusterBits    = 9
	qcowMaxClusterBits    = 21
	qcowMinExtClusterBits = 14 // with extended L2 entries
	qcowMaxL1Bytes        = 32 << 20
	qcowMaxRefTableBytes  = 8 << 20
	qcowMaxSnapshots      = 65536
	qcowMaxSnapshotExtra  = 1024
	qcowMaxSnapshotsBytes = 1024 * qcowMaxSnapshots
	qcowMaxBackingName    = 1023
	qcowMaxFormatName     = 15
	qcowV2HeaderLength    = 72
	qcowV3HeaderLength    = 104
	qcowMaxRefcountOrder  = 6
)

// Feature bits (incompatible_features, autoclear_features).
const (
	qcowDirty         = 1 << 0
	qcowCorrupt       = 1 << 1
	qcowExternalData  = 1 << 2
	qcowCompression   = 1 << 3
	qcowExtendedL2    = 1 << 4
	qcowKnownIncompat = 1<<5 - 1
	qcowRawExternal   = 1 << 1 // autoclear
)

// Header extension types.
const (
	extEnd            = 0x00000000
	extBackingFormat  = 0xe2792aca
	extExternalData   = 0x44415441
	extFeatureNames   = 0x6803f857
	extBitmaps        = 0x23852875
	extCryptHeader    = 0x0537be77
	compressionZlib   = 0
	compressionZstd   = 1
	l1Reserved        = 0x7f000000000001ff
	tableOffsetMask   = 0x00fffffffffffe00
	l2StdReserved     = 0x3f000000000001fe
	oflagCopied       = 1 << 63
	oflagCompressed   = 1 << 62
	oflagZero         = 1
	refTableReserved  = 0x1ff
	compressedSectors = 512
)

// qcowHeader holds the header fields, widened to the version 3 layout.
type qcowHeader struct {
	version          uint32
	backingOffset    uint64
	backingSize      uint32
	clusterBits      uint32
	size             uint64
	cryptMethod      uint32
	l1Size           uint32
	l1Offset         uint64
	refTableOffset   uint64
	refTableClusters uint32
	nbSnapshots      uint32
	snapshotsOffset  uint64
	incompat         uint64
	compat           uint64
	autoclear        uint64
	refcountOrder    uint32
	headerLength     uint32
	compression      byte
}

// errReference marks a reference out of the image: a backing file or an
// external data file.
var errReference = errors.New("the image refers to a file outside itself")

// ErrBackingRefused marks a backing file refused because Options names no
// directory for backing files: a caller says how its user names one.
var ErrBackingRefused = errors.New("backing files are refused")

// ErrRootUnclear marks a disk whose root partition cannot be told: a
// caller says how its user chooses one (Options.RootPartition).
var ErrRootUnclear = errors.New("choose the root partition")

// parseQcowHeader decodes and checks the fixed header in b, the file's
// first bytes (at most qcowV3HeaderLength+8 are looked at), against the
// spec and fileSize.
func parseQcowHeader(b []byte, fileSize int64) (*qcowHeader, error) {
	if len(b) < qcowV2HeaderLength {
		return nil, fmt.Errorf("qcow2 header: the file's %d bytes are fewer than the %d of a header", len(b), qcowV2HeaderLength)
	}
	be := binary.BigEndian
	h := &qcowHeader{
		version:          be.Uint32(b[4:]),
		backingOffset:    be.Uint64(b[8:]),
		backingSize:      be.Uint32(b[16:]),
		clusterBits:      be.Uint32(b[20:]),
		size:             be.Uint64(b[24:]),
		cryptMethod:      be.Uint32(b[32:]),
		l1Size:           be.Uint32(b[36:]),
		l1Offset:         be.Uint64(b[40:]),
		refTableOffset:   be.Uint64(b[48:]),
		refTableClusters: be.Uint32(b[56:]),
		nbSnapshots:      be.Uint32(b[60:]),
		snapshotsOffset:  be.Uint64(b[64:]),
		refcountOrder:    4,
		headerLength:     qcowV2HeaderLength,
	}
	switch h.version {
	case 2:
	case 3:
		if len(b) < qcowV3HeaderLength {
			return nil, fmt.Errorf("qcow2 header: the file's %d bytes are fewer than the %d of a version 3 header", len(b), qcowV3HeaderLength)
		}
		h.incompat, h.compat, h.autoclear = be.Uint64(b[72:]), be.Uint64(b[80:]), be.Uint64(b[88:])
		h.refcountOrder, h.headerLength = be.Uint32(b[96:]), be.Uint32(b[100:])
		if h.headerLength > qcowV3HeaderLength && len(b) > qcowV3HeaderLength {
			h.compression = b[qcowV3HeaderLength]
		}
	default:
		return nil, fmt.Errorf("qcow2 header: version %d, want 2 or 3", h.version)
	}
	if err := h.check(fileSize); err != nil {
		return nil, fmt.Errorf("qcow2 header: %w", err)
	}
	return h, nil
}

func (h *qcowHeader) clusterSize() int64 { return 1 << h.clusterBits }

// l2Entries is the number of entries of one L2 table.
func (h *qcowHeader) l2Entries() int64 {
	if h.incompat&qcowExtendedL2 != 0 {
		return h.clusterSize() / 16
	}
	return h.clusterSize() / 8
}

// within reports whether n bytes at off lie inside a file of size bytes.
func within(off, n uint64, size int64) bool {
	return off <= uint64(size) && n <= uint64(size)-off
}

func (h *qcowHeader) check(fileSize int64) error {
	if h.clusterBits < qcowMinClusterBits || h.clusterBits > qcowMaxClusterBits {
		return fmt.Errorf("cluster_bits %d outside %d..%d", h.clusterBits, qcowMinClusterBits, qcowMaxClusterBits)
	}
	cs := uint64(h.clusterSize())
	if h.version == 3 {
		if h.headerLength < qcowV3HeaderLength || h.headerLength%8 != 0 || uint64(h.headerLength) > cs {
			return fmt.Errorf("header_length %d: want a multiple of 8 from %d to the cluster size, %d", h.headerLength, qcowV3HeaderLength, cs)
		}
		if h.refcountOrder > qcowMaxRefcountOrder {
			return fmt.Errorf("refcount_order %d over %d", h.refcountOrder, qcowMaxRefcountOrder)
		}
		if unknown := h.incompat &^ qcowKnownIncompat; unknown != 0 {
			return fmt.Errorf("unknown incompatible features 0x%x: an image must not be read with features the reader does not know", unknown)
		}
		if h.incompat&qcowCorrupt != 0 {
			return errors.New("the image is marked corrupt (incompatible feature bit 1); `qemu-img check -r all` repairs it")
		}
		if h.incompat&qcowExtendedL2 != 0 && h.clusterBits < qcowMinExtClusterBits {
			return fmt.Errorf("extended L2 entries with cluster_bits %d, under %d", h.clusterBits, qcowMinExtClusterBits)
		}
		switch {
		case h.compression > compressionZstd:
			return fmt.Errorf("unknown compression_type %d", h.compression)
		case (h.compression != compressionZlib) != (h.incompat&qcowCompression != 0):
			return fmt.Errorf("compression_type %d disagrees with incompatible feature bit 3", h.compression)
		}
	}
	if uint64(h.headerLength) > uint64(fileSize) {
		return fmt.Errorf("header_length %d exceeds the file (%d bytes)", h.headerLength, fileSize)
	}
	if h.cryptMethod != 0 {
		return fmt.Errorf("encrypted (crypt_method %d): an encrypted image cannot be read without its key", h.cryptMethod)
	}
	if h.l1Size > qcowMaxL1Bytes/8 {
		return fmt.Errorf("L1 table of %d entries over qemu's limit of %d", h.l1Size, qcowMaxL1Bytes/8)
	}
	// l1Size * l2Entries * cs is at most 2^22 * 2^18 * 2^21: no overflow.
	if covered := uint64(h.l1Size) * uint64(h.l2Entries()) * cs; h.size > covered {
		return fmt.Errorf("virtual size %d exceeds the %d bytes its L1 table of %d entries maps", h.size, covered, h.l1Size)
	}
	if h.l1Size > 0 {
		if h.l1Offset%cs != 0 || h.l1Offset == 0 {
			return fmt.Errorf("l1_table_offset %d is not a cluster boundary past the header", h.l1Offset)
		}
		if !within(h.l1Offset, uint64(h.l1Size)*8, fileSize) {
			return fmt.Errorf("L1 table of %d entries at offset %d exceeds the file (%d bytes)", h.l1Size, h.l1Offset, fileSize)
		}
	}
	if h.refTableClusters == 0 || uint64(h.refTableClusters)*cs > qcowMaxRefTableBytes {
		return fmt.Errorf("refcount table of %d clusters: want 1 to %d", h.refTableClusters, qcowMaxRefTableBytes/cs)
	}
	if h.refTableOffset%cs != 0 || h.refTableOffset == 0 {
		return fmt.Errorf("refcount_table_offset %d is not a cluster boundary past the header", h.refTableOffset)
	}
	if !within(h.refTableOffset, uint64(h.refTableClusters)*cs, fileSize) {
		return fmt.Errorf("refcount table of %d clusters at offset %d exceeds the file (%d bytes)", h.refTableClusters, h.refTableOffset, fileSize)
	}
	if h.nbSnapshots > qcowMaxSnapshots {
		return fmt.Errorf("nb_snapshots %d over qemu's limit of %d", h.nbSnapshots, qcowMaxSnapshots)
	}
	if h.nbSnapshots > 0 {
		if h.snapshotsOffset%cs != 0 || h.snapshotsOffset == 0 {
			return fmt.Errorf("snapshots_offset %d is not a cluster boundary past the header", h.snapshotsOffset)
		}
		// Each entry takes at least 40 bytes.
		if !within(h.snapshotsOffset, uint64(h.nbSnapshots)*40, fileSize) {
			return fmt.Errorf("%d snapshots at offset %d exceed the file (%d bytes)", h.nbSnapshots, h.snapshotsOffset, fileSize)
		}
	}
	if h.backingOffset != 0 {
		if h.backingSize == 0 || h.backingSize > qcowMaxBackingName {
			return fmt.Errorf("backing file name of %d bytes: want 1 to %d", h.backingSize, qcowMaxBackingName)
		}
		if !within(h.backingOffset, uint64(h.backingSize), min(int64(cs), fileSize)) {
			return fmt.Errorf("backing file name of %d bytes at offset %d lies outside the header cluster", h.backingSize, h.backingOffset)
		}
	}
	return nil
}

// qcowRefs are the references a header cluster makes out of the image.
type qcowRefs struct {
	backing, backingFormat, dataFile string
}

// parseQcowRefs reads the header extensions and the backing file name from
// the header cluster, hc.
func parseQcowRefs(h *qcowHeader, hc []byte) (*qcowRefs, error) {
	refs := &qcowRefs{}
	end := uint64(len(hc))
	if h.backingOffset != 0 {
		refs.backing = string(hc[h.backingOffset : h.backingOffset+uint64(h.backingSize)])
		end = min(end, h.backingOffset)
	}
	seen := map[uint32]bool{}
	for off := uint64(h.headerLength); off < end; {
		if end-off < 8 {
			return nil, fmt.Errorf("qcow2 header extension at offset %d runs past the header cluster", off)
		}
		typ, n := binary.BigEndian.Uint32(hc[off:]), uint64(binary.BigEndian.Uint32(hc[off+4:]))
		off += 8
		if typ == extEnd {
			break
		}
		if n > end-off {
			return nil, fmt.Errorf("qcow2 header extension 0x%08x of %d bytes runs past the header cluster", typ, n)
		}
		data := hc[off : off+n]
		off += (n + 7) &^ 7
		switch typ {
		case extBackingFormat, extExternalData, extFeatureNames, extBitmaps, extCryptHeader:
			if seen[typ] {
				return nil, fmt.Errorf("qcow2 header extension 0x%08x appears twice", typ)
			}
			seen[typ] = true
		}
		switch typ {
		case extBackingFormat:
			if n > qcowMaxFormatName {
				return nil, fmt.Errorf("qcow2 backing file format name of %d bytes, over %d", n, qcowMaxFormatName)
			}
			refs.backingFormat = string(data)
		case extExternalData:
			refs.dataFile = string(data)
		}
	}
	if h.incompat&qcowExternalData != 0 || h.autoclear&qcowRawExternal != 0 || refs.dataFile != "" {
		name := refs.dataFile
		if name == "" {
			name = "(unnamed)"
		}
		return nil, fmt.Errorf("%w: an external data file %q holds its clusters; external data files are refused", errReference, name)
	}
	return refs, nil
}

// hostFile is one file of an image's chain.
type hostFile struct {
	name string
	f    *os.File
	size int64
	id   int
	w    *work
}

// wrap names a backing file in an error about it; errors about the image
// itself are named by the caller.
func (h *hostFile) wrap(err error) error {
	if err == nil || h.id == 0 {
		return err
	}
	return fmt.Errorf("backing file %s: %w", h.name, err)
}

// readFull reads len(p) bytes of metadata at off, all inside the file, and
// charges them: data is charged where the filesystem reads the disk.
func (h *hostFile) readFull(p []byte, off int64) error {
	if err := h.w.charge(len(p)); err != nil {
		return err
	}
	return h.readAt(p, off)
}

// readAt reads len(p) bytes at off, all inside the file.
func (h *hostFile) readAt(p []byte, off int64) error {
	if off < 0 || !within(uint64(off), uint64(len(p)), h.size) {
		return fmt.Errorf("%d bytes at offset %d lie past the end of the file (%d bytes)", len(p), off, h.size)
	}
	if _, err := h.f.ReadAt(p, off); err != nil {
		return fmt.Errorf("reading %d bytes at offset %d: %w", len(p), off, err)
	}
	return nil
}

// readPadded reads p at off, as zeros where it runs past the file's end: a
// qcow2 file may end inside its last data cluster.
func (h *hostFile) readPadded(p []byte, off int64) error {
	n := int64(len(p))
	if off >= h.size {
		n = 0
	} else if n > h.size-off {
		n = h.size - off
	}
	clear(p[n:])
	if n == 0 {
		return nil
	}
	return h.readAt(p[:n], off)
}

// virtualDisk is a disk as a guest sees it.
type virtualDisk interface {
	io.ReaderAt
	Size() int64
}

// rawDisk is a raw image file: the disk is the file.
type rawDisk struct{ *hostFile }

func (r rawDisk) Size() int64 { return r.size }

func (r rawDisk) ReadAt(p []byte, off int64) (int, error) {
	n, err := readClipped(p, off, r.size, func(p []byte, off int64) error { return r.readAt(p, off) })
	if err != io.EOF {
		err = r.wrap(err)
	}
	return n, err
}

// readClipped implements io.ReaderAt over a disk of size bytes: a read at or
// past the end is io.EOF, and one that runs past it reads what there is and
// says io.EOF, as the interface wants.
func readClipped(p []byte, off, size int64, read func([]byte, int64) error) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read at negative offset %d", off)
	}
	if off >= size {
		return 0, io.EOF
	}
	n := len(p)
	if int64(n) > size-off {
		n = int(size - off)
	}
	if err := read(p[:n], off); err != nil {
		return 0, err
	}
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// qcow2 is a checked qcow2 image.
type qcow2 struct {
	*hostFile
	h       *qcowHeader
	cb      uint
	cs      int64
	l2n     int64
	ext     bool
	l1      []uint64
	backing virtualDisk

	mu       sync.Mutex
	inflater func(dst, src []byte) error
}

func (q *qcow2) Size() int64 { return int64(q.h.size) }

func (q *qcow2) ReadAt(p []byte, off int64) (int, error) {
	n, err := readClipped(p, off, q.Size(), func(p []byte, off int64) error {
		for len(p) > 0 {
			n := min(int64(len(p)), q.cs-off&(q.cs-1))
			if err := q.readCluster(p[:n], off); err != nil {
				return err
			}
			p, off = p[n:], off+n
		}
		return nil
	})
	if err != io.EOF {
		err = q.wrap(err)
	}
	return n, err
}

// entry returns the L2 entry, and for extended L2 entries the subcluster
// bitmap, of the guest cluster holding pos; ok is false when no L2 table
// maps it.
func (q *qcow2) entry(pos int64) (e, bitmap uint64, ok bool, err error) {
	vc := pos >> q.cb
	l1i := vc / q.l2n
	if l1i >= int64(len(q.l1)) {
		return 0, 0, false, fmt.Errorf("guest offset %d lies past the L1 table", pos)
	}
	l2off := q.l1[l1i] & tableOffsetMask
	if l2off == 0 {
		return 0, 0, false, nil
	}
	t, err := q.l2Table(l2off)
	if err != nil {
		return 0, 0, false, err
	}
	i := vc % q.l2n
	if q.ext {
		return binary.BigEndian.Uint64(t[i*16:]), binary.BigEndian.Uint64(t[i*16+8:]), true, nil
	}
	return binary.BigEndian.Uint64(t[i*8:]), 0, true, nil
}

func (q *qcow2) l2Table(off uint64) ([]byte, error) {
	k := lruKey{file: q.id, off: off}
	if t, ok := q.w.l2.get(k); ok {
		return t, nil
	}
	t := make([]byte, q.cs)
	if err := q.readFull(t, int64(off)); err != nil {
		return nil, err
	}
	q.w.l2.put(k, t)
	return t, nil
}

// readCluster reads p, which lies inside the guest cluster at pos.
func (q *qcow2) readCluster(p []byte, pos int64) error {
	e, bitmap, ok, err := q.entry(pos)
	if err != nil || !ok {
		if err != nil {
			return err
		}
		return q.unallocated(p, pos)
	}
	in := pos & (q.cs - 1)
	if e&oflagCompressed != 0 {
		data, err := q.inflate(e)
		if err != nil {
			return err
		}
		copy(p, data[in:])
		return nil
	}
	host := int64(e & tableOffsetMask)
	if !q.ext {
		switch {
		case e&oflagZero != 0:
			clear(p)
			return nil
		case host == 0:
			return q.unallocated(p, pos)
		}
		return q.readPadded(p, host+in)
	}
	sub := q.cs / 32
	for len(p) > 0 {
		si := in / sub
		n := min(int64(len(p)), sub-in%sub)
		switch {
		case bitmap>>si&1 != 0:
			err = q.readPadded(p[:n], host+in)
		case bitmap>>(32+si)&1 != 0:
			clear(p[:n])
		default:
			err = q.unallocated(p[:n], pos)
		}
		if err != nil {
			return err
		}
		p, in, pos = p[n:], in+n, pos+n
	}
	return nil
}

// unallocated reads p at pos from the backing file, as zeros where there is
// none or it is smaller.
func (q *qcow2) unallocated(p []byte, pos int64) error {
	if q.backing == nil || pos >= q.backing.Size() {
		clear(p)
		return nil
	}
	n := min(int64(len(p)), q.backing.Size()-pos)
	if got, err := q.backing.ReadAt(p[:n], pos); int64(got) < n {
		return err
	}
	clear(p[n:])
	return nil
}

// compressedRange is where the compressed data of L2 entry e lies in the
// file: from off, size bytes (the last sector may hold less, or the start
// of another cluster's data).
func (q *qcow2) compressedRange(e uint64) (off uint64, size int64) {
	x := 62 - (q.cb - 8)
	off = e & (1<<x - 1)
	sectors := e >> x & (1<<(q.cb-8) - 1)
	return off, int64(sectors+1)*compressedSectors - int64(off%compressedSectors)
}

// inflate returns the cluster that compressed L2 entry e holds, from the
// cache or inflated once, to exactly one cluster. qemu reads such a cluster
// the same way: less is corruption, and what follows the cluster's data is
// not looked at.
func (q *qcow2) inflate(e uint64) ([]byte, error) {
	off, size := q.compressedRange(e)
	k := lruKey{file: q.id, off: off, n: int(size)}
	if data, ok := q.w.zbuf.get(k); ok {
		return data, nil
	}
	if off >= uint64(q.size) {
		return nil, fmt.Errorf("compressed cluster at offset %d lies past the end of the file (%d bytes)", off, q.size)
	}
	src := make([]byte, min(size, q.size-int64(off)))
	if err := q.readAt(src, int64(off)); err != nil {
		return nil, err
	}
	if err := q.w.charge(int(q.cs)); err != nil {
		return nil, err
	}
	dst := make([]byte, q.cs)
	q.mu.Lock()
	err := q.inflater(dst, src)
	q.mu.Unlock()
	if err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			err = fmt.Errorf("it inflates to less than the cluster size, %d bytes", q.cs)
		}
		return nil, fmt.Errorf("compressed cluster at offset %d: %w", off, err)
	}
	q.w.zbuf.put(k, dst)
	q.w.mu.Lock()
	q.w.inflated++
	q.w.mu.Unlock()
	return dst, nil
}

// newInflater returns the decompressor of compression type t, which fills
// dst, one cluster, and reads no further.
func newInflater(t byte, clusterSize int64) (func(dst, src []byte) error, error) {
	switch t {
	case compressionZlib:
		// qcow2's "zlib" is raw deflate, with no zlib header.
		var fr io.ReadCloser
		return func(dst, src []byte) error {
			if fr == nil {
				fr = flate.NewReader(bytes.NewReader(src))
			} else if err := fr.(flate.Resetter).Reset(bytes.NewReader(src), nil); err != nil {
				return err
			}
			_, err := io.ReadFull(fr, dst)
			return err
		}, nil
	case compressionZstd:
		// A frame's window never needs to exceed the cluster it holds;
		// a larger one would be a header sizing an allocation.
		d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(uint64(max(clusterSize, zstd.MinWindowSize))))
		if err != nil {
			return nil, err
		}
		return func(dst, src []byte) error {
			if err := d.Reset(bytes.NewReader(src)); err != nil {
				return err
			}
			_, err := io.ReadFull(d, dst)
			return err
		}, nil
	}
	return nil, fmt.Errorf("unknown compression type %d", t)
}
