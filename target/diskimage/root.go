package diskimage

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/diskfs/go-diskfs/filesystem/ext4"

	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// A disk may hold several ext4 filesystems; the scan must judge the one a
// boot mounts as /, not the largest nor the first, or a hardened decoy
// would pass for a weak root. The rule, documented in docs/limits.md:
//
//  1. An ext4 filesystem on the whole disk is the root; a disk that also
//     carries a partition table with partitions is refused as ambiguous.
//  2. Otherwise every ext4 partition is a candidate. Each is checked; a
//     damaged one fails the open, whichever would be the root. A partition
//     that could be the root but cannot be read here (the GPT type of a
//     Linux root without ext4 in it, or an xfs, btrfs or f2fs filesystem)
//     is refused: judging the others would judge a decoy.
//  3. One candidate is the root.
//  4. Of several, those holding an OS (an os-release file) are kept, if
//     any do.
//  5. Then, in turn, each signal a boot goes by keeps the candidates that
//     have it, where some do: the GPT type GUID of a Linux root
//     (x86-64 or arm64), an /etc/fstab that mounts the candidate itself at
//     / (by UUID=, LABEL=, PARTUUID= or PARTLABEL=), the MBR active flag.
//  6. One left is the root; more is refused, naming them, and
//     Options.RootPartition chooses.
//
// A LUKS volume cannot be read without its key. The root is taken to be
// inside one when a LUKS partition carries the GPT type of a Linux root,
// when Options.RootPartition names a LUKS partition, or when the disk has one
// LUKS partition and no ext4 filesystem holding an OS: judging the /boot
// beside it would judge a decoy. Open then fails with an
// *EncryptedRootError, or, with Options.EncryptedRoot, returns the image
// with Encrypted set and no filesystem, for a caller that has the tree the
// volume was made from.

// candidate is an ext4 filesystem that could be the root.
type candidate struct {
	part  *Partition // nil: the whole disk
	start int64
	size  int64
	super *ext4Super
	view  *ext4View
	fsys  sysroot.FS

	osRelease, fstabRoot bool
	rootType             string
}

func (c *candidate) String() string {
	var why []string
	if c.osRelease {
		why = append(why, "os-release")
	}
	if c.rootType != "" {
		why = append(why, "Linux root type ("+c.rootType+")")
	}
	if c.fstabRoot {
		why = append(why, "its fstab mounts it at /")
	}
	if c.part.Bootable {
		why = append(why, "bootable")
	}
	s := fmt.Sprintf("partition %d (ext4, %d MiB", c.part.Index, c.size>>20)
	if len(why) > 0 {
		s += ", " + strings.Join(why, ", ")
	}
	return s + ")"
}

// findRoot finds the root filesystem and opens it.
func (im *Image) findRoot(want int) error {
	size := im.disk.size
	table, err := readPartitionTable(im.disk, size)
	if err != nil && !errors.Is(err, errNoTable) {
		return err
	}
	if isExt4(im.disk, 0) {
		if table != nil && len(table.Parts) > 0 {
			return fmt.Errorf("an ext4 filesystem fills the whole disk, which also carries a %s: which one boots is not clear", table)
		}
		if want != 0 {
			return fmt.Errorf("root partition %d: the filesystem fills the whole disk; there are no partitions", want)
		}
		c, err := im.openCandidate(nil, 0, size)
		if err != nil {
			return err
		}
		im.use(c)
		return nil
	}
	if table == nil {
		return fmt.Errorf("%w: no ext4 superblock at the start and no partition table", ErrNoFilesystem)
	}
	im.table = table
	var lukss []*Partition
	for i := range table.Parts {
		p := &table.Parts[i]
		if !isLUKS(im.disk, p) {
			continue
		}
		lukss = append(lukss, p)
		if (want == 0 && linuxRootTypes[p.Type] != "") || want == p.Index {
			return im.encrypted(p)
		}
	}
	if want == 0 {
		if err := refuseUnreadable(im.disk, table); err != nil {
			return err
		}
	}
	var cands []*candidate
	for i := range table.Parts {
		p := &table.Parts[i]
		if want != 0 && p.Index != want {
			continue
		}
		if !isExt4(im.disk, p.Start) {
			if want != 0 {
				return fmt.Errorf("root partition %d: the partition holds no ext4 filesystem", want)
			}
			continue
		}
		c, err := im.openCandidate(p, p.Start, p.Size)
		if err != nil {
			return fmt.Errorf("partition %d: %w", p.Index, err)
		}
		cands = append(cands, c)
	}
	if want != 0 && len(cands) == 0 {
		return fmt.Errorf("root partition %d: no such partition in the %s", want, table)
	}
	if want == 0 && len(lukss) == 1 && !slices.ContainsFunc(cands, func(c *candidate) bool { return c.osRelease }) {
		return im.encrypted(lukss[0])
	}
	if len(cands) == 0 {
		return fmt.Errorf("%w in any partition of the %s", ErrNoFilesystem, table)
	}
	c, err := chooseRoot(cands)
	if err != nil {
		return err
	}
	im.use(c)
	return nil
}

// EncryptedRoot is the LUKS volume a disk's root filesystem is inside.
type EncryptedRoot struct {
	Partition Partition
	// UUID is the LUKS header's UUID, which crypttab names.
	UUID string
}

// EncryptedRootError says that the root filesystem is inside a LUKS
// volume, which cannot be read without its key.
type EncryptedRootError struct {
	EncryptedRoot
}

func (e *EncryptedRootError) Error() string {
	return fmt.Sprintf("the root filesystem is inside the LUKS volume on partition %d (UUID %s), which cannot be read without its key; scan it together with the rootfs tree it was made from (the gpuhost-rootfs builder keeps it beside the disk)", e.Partition.Index, e.UUID)
}

// luksMagic opens every LUKS header, LUKS1 and LUKS2.
var luksMagic = []byte{'L', 'U', 'K', 'S', 0xba, 0xbe}

// isLUKS says whether p starts with a LUKS header.
func isLUKS(r io.ReaderAt, p *Partition) bool {
	if p.Size < 4096 {
		return false
	}
	b := make([]byte, 6)
	_, err := r.ReadAt(b, p.Start)
	return err == nil && bytes.Equal(b, luksMagic)
}

// encrypted records that the root is inside the LUKS volume on p, or
// refuses the image when the caller cannot scan such a root.
func (im *Image) encrypted(p *Partition) error {
	hdr := make([]byte, 208)
	if _, err := im.disk.ReadAt(hdr, p.Start); err != nil {
		return fmt.Errorf("partition %d: reading its LUKS header: %w", p.Index, err)
	}
	// The UUID field, NUL-padded text, at the same place in LUKS1 and 2.
	uuid := string(bytes.TrimRight(hdr[168:208], "\x00"))
	for _, c := range uuid {
		if !(c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return fmt.Errorf("partition %d: its LUKS header's UUID %q is not a UUID", p.Index, uuid)
		}
	}
	e := EncryptedRoot{Partition: *p, UUID: uuid}
	if !im.allowEncrypted {
		return &EncryptedRootError{e}
	}
	im.Encrypted, im.Root, im.Offset = &e, p, p.Start
	return nil
}

// refuseUnreadable refuses a table with a partition that could hold the
// root but whose filesystem this package cannot read.
func refuseUnreadable(r io.ReaderAt, t *partitionTable) error {
	for _, p := range t.Parts {
		if isExt4(r, p.Start) {
			continue
		}
		if arch := linuxRootTypes[p.Type]; arch != "" {
			return fmt.Errorf("partition %d has the GPT type of a Linux root filesystem (%s) but holds no ext4 filesystem, so it cannot be judged; %w", p.Index, arch, ErrRootUnclear)
		}
		if fs := foreignFS(r, p); fs != "" {
			return fmt.Errorf("partition %d holds %s filesystem, which cannot be read here, so whether it is the root cannot be told; %w", p.Index, fs, ErrRootUnclear)
		}
	}
	return nil
}

// foreignFS names the Linux root filesystem other than ext4 that p holds,
// by its superblock magic, or "".
func foreignFS(r io.ReaderAt, p Partition) string {
	for _, m := range []struct {
		name  string
		at    int64
		magic string
	}{{"an xfs", 0, "XFSB"}, {"a btrfs", 0x10040, "_BHRfS_M"}, {"an f2fs", 0x400, "\x10\x20\xf5\xf2"}} {
		if m.at+int64(len(m.magic)) > p.Size {
			continue
		}
		b := make([]byte, len(m.magic))
		if _, err := r.ReadAt(b, p.Start+m.at); err == nil && string(b) == m.magic {
			return m.name
		}
	}
	return ""
}

func (im *Image) use(c *candidate) {
	im.Offset, im.Root, im.view, im.fsys = c.start, c.part, c.view, c.fsys
}

// openCandidate checks and opens the ext4 filesystem of size bytes at start.
func (im *Image) openCandidate(p *Partition, start, size int64) (*candidate, error) {
	s, err := readExt4Super(im.disk, start, size)
	if err != nil {
		return nil, err
	}
	if err := checkExt4Layout(im.disk, start, s); err != nil {
		return nil, err
	}
	// go-diskfs holds the group descriptor table while the image is open.
	if err := im.chain.w.alloc(int64(s.groups*s.descSize), "the ext4 group descriptor table"); err != nil {
		return nil, err
	}
	b := &budget{}
	efs, err := ext4.Read(newStorage(&budgeted{ra: im.disk, b: b}, im.disk.size), size, start, sectorSize)
	if err != nil {
		return nil, fmt.Errorf("reading the ext4 filesystem at byte %d: %w", start, err)
	}
	if err := im.disk.Err(); err != nil {
		return nil, err
	}
	c := &candidate{part: p, start: start, size: size, super: s, view: &ext4View{fs: efs, budget: b, modes: &inodeModes{r: &budgeted{ra: im.disk, b: b}, start: start, s: s}}}
	c.fsys = sysroot.FromFS(c.view, im.file)
	if p == nil {
		return c, nil
	}
	c.rootType = linuxRootTypes[p.Type]
	for _, name := range []string{"/etc/os-release", "/usr/lib/os-release"} {
		if _, err := c.fsys.Lstat(name); err == nil {
			c.osRelease = true
		}
	}
	if data, err := c.fsys.ReadFileLimit("/etc/fstab", 1<<20); err == nil {
		c.fstabRoot = mountsItselfAtRoot(data, c)
	}
	if err := c.view.Err(); err != nil {
		return nil, fmt.Errorf("corrupt filesystem: %w", err)
	}
	return c, nil
}

// mountsItselfAtRoot reports whether fstab mounts the candidate at /.
func mountsItselfAtRoot(fstab []byte, c *candidate) bool {
	sc := bufio.NewScanner(bytes.NewReader(fstab))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 || strings.HasPrefix(f[0], "#") || f[1] != "/" {
			continue
		}
		key, value, ok := strings.Cut(f[0], "=")
		if !ok {
			dir, base, _ := strings.Cut(strings.TrimPrefix(f[0], "/dev/disk/"), "/")
			if !strings.HasPrefix(f[0], "/dev/disk/by-") {
				continue
			}
			key, value = strings.ToUpper(strings.TrimPrefix(dir, "by-")), base
		}
		switch strings.ToUpper(key) {
		case "UUID":
			return strings.EqualFold(value, c.super.uuid)
		case "LABEL":
			return value == c.super.label && value != ""
		case "PARTUUID":
			return strings.EqualFold(value, c.part.UUID)
		case "PARTLABEL":
			return value == c.part.Label && value != ""
		}
		return false
	}
	return false
}

// chooseRoot applies steps 3 to 6 of the rule.
func chooseRoot(cands []*candidate) (*candidate, error) {
	keep := func(has func(*candidate) bool) {
		var kept []*candidate
		for _, c := range cands {
			if has(c) {
				kept = append(kept, c)
			}
		}
		if len(kept) > 0 {
			cands = kept
		}
	}
	for _, has := range []func(*candidate) bool{
		func(c *candidate) bool { return c.osRelease },
		func(c *candidate) bool { return c.rootType != "" },
		func(c *candidate) bool { return c.fstabRoot },
		func(c *candidate) bool { return c.part.Bootable },
	} {
		if len(cands) == 1 {
			return cands[0], nil
		}
		keep(has)
	}
	if len(cands) == 1 {
		return cands[0], nil
	}
	names := make([]string, len(cands))
	for i, c := range cands {
		names[i] = c.String()
	}
	return nil, fmt.Errorf("cannot tell which partition holds the root filesystem: %s could each be it; %w", strings.Join(names, " and "), ErrRootUnclear)
}
