package diskimage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// chain opens the files of one image: the image the caller named and, where
// the caller allows, its backing files. Each file is opened once, without
// blocking on a FIFO, and must be a regular file.
type chain struct {
	w     *work
	allow string // absolute Options.AllowBacking; "" refuses backing files
	files []*hostFile
	seen  map[[2]uint64]bool
}

func (c *chain) close() {
	for _, h := range c.files {
		h.f.Close()
	}
	c.files = nil
}

// add registers an open file of the chain, refusing what is not a regular
// file and a file met twice, which would loop.
func (c *chain) add(name string, f *os.File) (*hostFile, error) {
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		f.Close()
		return nil, fmt.Errorf("%s: not a regular file", name)
	}
	key := [2]uint64{uint64(st.Dev), st.Ino}
	if c.seen[key] {
		f.Close()
		return nil, fmt.Errorf("%w: %s appears twice in its backing chain", errReference, name)
	}
	if c.seen == nil {
		c.seen = map[[2]uint64]bool{}
	}
	c.seen[key] = true
	h := &hostFile{name: name, f: f, size: st.Size, id: len(c.files), w: c.w}
	c.files = append(c.files, h)
	return h, nil
}

// openTop opens the image the caller named.
func (c *chain) openTop(name string) (*hostFile, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, err
	}
	return c.add(name, f)
}

// openDisk opens h as a disk: qcow2 when it starts with the qcow2 magic
// (or format says so), else raw. depth counts the files above it.
func (c *chain) openDisk(h *hostFile, format string, depth int) (virtualDisk, string, error) {
	head := make([]byte, min(h.size, qcowV3HeaderLength+8))
	if err := h.readFull(head, 0); err != nil {
		return nil, "", h.wrap(err)
	}
	isQcow := bytes.HasPrefix(head, qcow2Magic)
	switch format {
	case "":
		if !isQcow {
			return rawDisk{h}, "raw", nil
		}
	case "raw":
		return rawDisk{h}, "raw", nil
	case "qcow2":
		if !isQcow {
			return nil, "", h.wrap(errors.New("named as a qcow2 backing file, but it has no qcow2 magic"))
		}
	default:
		return nil, "", h.wrap(fmt.Errorf("backing file format %q: only qcow2 and raw are read", format))
	}
	q, err := c.openQcow2(h, head, depth)
	if err != nil {
		return nil, "", err
	}
	return q, "qcow2", nil
}

func (c *chain) openQcow2(h *hostFile, head []byte, depth int) (*qcow2, error) {
	hd, err := parseQcowHeader(head, h.size)
	if err != nil {
		return nil, h.wrap(err)
	}
	hc := make([]byte, min(hd.clusterSize(), h.size))
	if err := h.readFull(hc, 0); err != nil {
		return nil, h.wrap(err)
	}
	refs, err := parseQcowRefs(hd, hc)
	if err != nil {
		return nil, h.wrap(err)
	}
	q := &qcow2{hostFile: h, h: hd, cb: uint(hd.clusterBits), cs: hd.clusterSize(), l2n: hd.l2Entries(), ext: hd.incompat&qcowExtendedL2 != 0}
	if q.inflater, err = newInflater(hd.compression, q.cs); err != nil {
		return nil, h.wrap(err)
	}
	if q.l1, err = q.readTable(hd.l1Offset, int(hd.l1Size), "the L1 table"); err != nil {
		return nil, h.wrap(err)
	}
	if err := q.checkStructure(); err != nil {
		return nil, h.wrap(fmt.Errorf("corrupt qcow2 image: %w", err))
	}
	if refs.backing != "" {
		if q.backing, err = c.openBacking(h, refs, depth); err != nil {
			return nil, err
		}
	}
	return q, nil
}

// openBacking opens the backing file that from names, inside c.allow,
// following no symbolic link on the way.
func (c *chain) openBacking(from *hostFile, refs *qcowRefs, depth int) (virtualDisk, error) {
	ref := refs.backing
	if c.allow == "" {
		return nil, fmt.Errorf("%w: %s names the backing file %q; %w unless a directory holds the whole chain", errReference, from.name, ref, ErrBackingRefused)
	}
	if depth+1 >= maxChain {
		return nil, fmt.Errorf("%w: %s: the backing chain is deeper than %d files", errReference, from.name, maxChain)
	}
	path, err := backingPath(c.allow, from.name, ref)
	if err != nil {
		return nil, fmt.Errorf("%w: %s names the backing file %q: %v", errReference, from.name, ref, err)
	}
	f, err := openBeneath(c.allow, path)
	if err != nil {
		return nil, fmt.Errorf("%w: %s names the backing file %q: %v", errReference, from.name, ref, err)
	}
	h, err := c.add(path, f)
	if err != nil {
		return nil, err
	}
	d, _, err := c.openDisk(h, refs.backingFormat, depth+1)
	return d, err
}

// backingPath resolves ref as qemu does, relative to the directory of the
// image naming it, and refuses a path that leaves dir.
func backingPath(dir, from, ref string) (string, error) {
	if strings.ContainsRune(ref, 0) {
		return "", errors.New("the name holds a NUL byte")
	}
	p := ref
	if !filepath.IsAbs(p) {
		abs, err := filepath.Abs(from)
		if err != nil {
			return "", err
		}
		p = filepath.Join(filepath.Dir(abs), p)
	}
	p = filepath.Clean(p)
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("%s lies outside the backing files' directory %s", p, dir)
	}
	return p, nil
}

// openBeneath opens path, which lies inside dir, one component at a time
// with O_NOFOLLOW: a symbolic link anywhere below dir is refused, not
// followed, so no link can lead the chain out of dir.
func openBeneath(dir, path string) (*os.File, error) {
	rel, err := filepath.Rel(dir, path)
	if err != nil {
		return nil, err
	}
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the backing files' directory %s: %w", dir, err)
	}
	parts := strings.Split(rel, string(filepath.Separator))
	for i, part := range parts {
		flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_CLOEXEC
		if i < len(parts)-1 {
			flags |= unix.O_DIRECTORY
		} else {
			flags |= unix.O_NONBLOCK
		}
		next, err := unix.Openat(fd, part, flags, 0)
		unix.Close(fd)
		if errors.Is(err, unix.ELOOP) || (errors.Is(err, unix.ENOTDIR) && i < len(parts)-1) {
			return nil, fmt.Errorf("%s: %s is a symbolic link or not a directory, and links are not followed", path, filepath.Join(append([]string{dir}, parts[:i+1]...)...))
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		fd = next
	}
	return os.NewFile(uintptr(fd), path), nil
}
