package diskimage

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// writeTree makes a directory of files, name to content.
func writeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// osTree is a small OS tree: an os-release and an sshd_config saying
// which one it is.
func osTree(t testing.TB, which string, extra map[string]string) string {
	files := map[string]string{
		"etc/os-release":      "ID=debian\nPRETTY_NAME=\"" + which + "\"\n",
		"etc/ssh/sshd_config": "PermitRootLogin " + which + "\n",
	}
	for k, v := range extra {
		files[k] = v
	}
	return writeTree(t, files)
}

// ext4Of makes a raw ext4 image of tree with mkfs.ext4 -d; extra flags
// come first.
func ext4Of(t testing.TB, tree, size string, flags ...string) string {
	t.Helper()
	mkfs := testutil.Tool(t, "mkfs.ext4", "e2fsprogs")
	out := filepath.Join(t.TempDir(), "fs.raw")
	testutil.Run(t, time.Minute, mkfs, append(append([]string{"-q"}, flags...), "-d", tree, out, size)...)
	return out
}

// qemuImg runs qemu-img.
func qemuImg(t testing.TB, args ...string) string {
	t.Helper()
	return testutil.Run(t, time.Minute, testutil.Tool(t, "qemu-img", "qemu-utils"), args...)
}

// convert makes a qcow2 of raw with the given qemu-img convert options.
func convert(t testing.TB, raw string, opts ...string) string {
	t.Helper()
	out := filepath.Join(t.TempDir(), "disk.qcow2")
	qemuImg(t, append(append([]string{"convert", "-O", "qcow2"}, opts...), raw, out)...)
	return out
}

func readFile(t testing.TB, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t testing.TB, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// patched writes a copy of file with each patch (offset to bytes) applied.
func patched(t testing.TB, file string, patches map[int64][]byte) string {
	t.Helper()
	data := readFile(t, file)
	for off, b := range patches {
		copy(data[off:], b)
	}
	return writeFile(t, t.TempDir(), filepath.Base(file), data)
}

func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }
func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

// mustFail opens file with o and wants an error naming file and each of
// want.
func mustFail(t *testing.T, o Options, file string, want ...string) error {
	t.Helper()
	im, err := o.Open(t.Context(), file)
	if err == nil {
		walk(im.FS(), "/", 0)
		err = im.Err()
		im.Close()
	}
	if err == nil {
		t.Fatalf("%s opened and read cleanly", file)
	}
	if !strings.Contains(err.Error(), file) {
		t.Errorf("the error does not name %s: %v", file, err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the error does not say %q: %v", w, err)
		}
	}
	return err
}

// mustRead opens file with o and wants /etc/ssh/sshd_config to say which.
func mustRead(t *testing.T, o Options, file, which string) *Image {
	t.Helper()
	im, err := o.Open(t.Context(), file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { im.Close() })
	b, err := im.FS().ReadFile("/etc/ssh/sshd_config")
	if err != nil || string(b) != "PermitRootLogin "+which+"\n" {
		t.Fatalf("%s: sshd_config %q, %v; want the tree %q", file, b, err, which)
	}
	if err := im.Err(); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return im
}

// canary is a file that must never be opened; inotify tells if it was.
type canary struct {
	path string
	fd   int
}

func newCanary(t *testing.T, dir string) *canary {
	t.Helper()
	c := &canary{path: filepath.Join(dir, "canary.raw")}
	if err := os.WriteFile(c.path, bytes.Repeat([]byte("host secret "), 1<<16), 0o644); err != nil {
		t.Fatal(err)
	}
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	if _, err := unix.InotifyAddWatch(fd, c.path, unix.IN_OPEN|unix.IN_ACCESS); err != nil {
		t.Fatal(err)
	}
	c.fd = fd
	return c
}

// untouched fails the test if the canary was opened or read.
func (c *canary) untouched(t *testing.T) {
	t.Helper()
	touched, err := c.touched()
	if err != nil {
		t.Fatal(err)
	}
	if touched {
		t.Errorf("%s was opened or read", c.path)
	}
}

// touched drains the inotify events and reports whether there were any.
func (c *canary) touched() (bool, error) {
	buf := make([]byte, 4096)
	n, err := unix.Read(c.fd, buf)
	if errors.Is(err, unix.EAGAIN) {
		return false, nil
	}
	return n > 0, err
}

// TestCanary shows that the canary sees an open, so that untouched means
// something.
func TestCanary(t *testing.T) {
	c := newCanary(t, t.TempDir())
	c.untouched(t)
	f, err := os.Open(c.path)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if touched, err := c.touched(); !touched || err != nil {
		t.Errorf("an open of the canary went unseen: %v", err)
	}
}

// rawDeflate compresses b as qcow2 stores a cluster: raw deflate.
func rawDeflate(t testing.TB, b []byte) []byte {
	var out bytes.Buffer
	w, err := flate.NewWriter(&out, flate.BestCompression)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(b)
	w.Close()
	return out.Bytes()
}

// qcowLayout builds a qcow2 file by hand, for the layouts qemu-img never
// writes: cluster 0 the header, 1 the refcount table, 2 the refcount block,
// 3 the L1 table, 4 the L2 table, data from 5.
type qcowLayout struct {
	clusterBits uint32
	size        uint64 // virtual size
	l2          []uint64
	data        []byte // placed at cluster 5
	refcounts   map[int]uint16
	header      map[int][]byte // patches of the header
	fileSize    int            // zeros up to this size, when larger
}

func (l *qcowLayout) bytes() []byte {
	cs := 1 << l.clusterBits
	out := make([]byte, max(5*cs+len(l.data), l.fileSize))
	h := out[:cs]
	copy(h, "QFI\xfb")
	binary.BigEndian.PutUint32(h[4:], 3)
	binary.BigEndian.PutUint32(h[20:], l.clusterBits)
	binary.BigEndian.PutUint64(h[24:], l.size)
	binary.BigEndian.PutUint32(h[36:], 1)
	binary.BigEndian.PutUint64(h[40:], uint64(3*cs))
	binary.BigEndian.PutUint64(h[48:], uint64(cs))
	binary.BigEndian.PutUint32(h[56:], 1)
	binary.BigEndian.PutUint32(h[96:], 4)
	binary.BigEndian.PutUint32(h[100:], 112)
	binary.BigEndian.PutUint64(out[cs:], uint64(2*cs))
	binary.BigEndian.PutUint64(out[3*cs:], 1<<63|uint64(4*cs))
	for i, e := range l.l2 {
		binary.BigEndian.PutUint64(out[4*cs+8*i:], e)
	}
	copy(out[5*cs:], l.data)
	clusters := (len(out) + cs - 1) / cs
	for c := range clusters {
		n := uint16(1)
		if v, ok := l.refcounts[c]; ok {
			n = v
		}
		binary.BigEndian.PutUint16(out[2*cs+2*c:], n)
	}
	for off, b := range l.header {
		copy(out[off:], b)
	}
	return out
}

// compressedEntry is the L2 entry of a compressed cluster of size bytes at
// off, for cluster_bits cb.
func compressedEntry(cb uint32, off uint64, size int) uint64 {
	x := 62 - (cb - 8)
	sectors := (off%512 + uint64(size) + 511) / 512
	return 1<<62 | (sectors-1)<<x | off
}
