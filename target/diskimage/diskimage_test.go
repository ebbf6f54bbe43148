package diskimage

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/diskfs/go-diskfs"
	"github.com/diskfs/go-diskfs/partition"
	"github.com/diskfs/go-diskfs/partition/gpt"
	"github.com/diskfs/go-diskfs/partition/mbr"

	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// mkfs builds a 64 MiB ext4 image of tree the way the builder does, with
// no root and no loop device.
func mkfs(t testing.TB, tree, img string) { mkfsSize(t, tree, img, "64M") }

func mkfsSize(t testing.TB, tree, img, size string) {
	t.Helper()
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		t.Skip("mkfs.ext4 not installed (e2fsprogs)")
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-d", tree, img, size).CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v\n%s", err, out)
	}
}

func toQcow2(t testing.TB, raw, out string) {
	t.Helper()
	if _, err := exec.LookPath("qemu-img"); err != nil {
		t.Skip("qemu-img not installed (make build-deps)")
	}
	if b, err := exec.Command("qemu-img", "convert", "-O", "qcow2", raw, out).CombinedOutput(); err != nil {
		t.Fatalf("qemu-img convert: %v\n%s", err, b)
	}
}

// toGPT writes a disk with a GPT holding one Linux partition, and the raw
// ext4 image in it.
func toGPT(t testing.TB, raw, out string) { toTable(t, raw, out, false) }

// toMBR does the same with an MBR table: a small partition first, then the
// filesystem's.
func toMBR(t testing.TB, raw, out string) { toTable(t, raw, out, true) }

func toTable(t testing.TB, raw, out string, useMBR bool) {
	t.Helper()
	const start = 2048 // sectors
	info, err := os.Stat(raw)
	if err != nil {
		t.Fatal(err)
	}
	size := info.Size() + (start+2048)*512
	d, err := diskfs.Create(out, size, diskfs.SectorSizeDefault)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var table partition.Table = &gpt.Table{
		LogicalSectorSize:  512,
		PhysicalSectorSize: 512,
		ProtectiveMBR:      true,
		Partitions: []*gpt.Partition{{
			Index: 1,
			Start: start,
			End:   start + uint64(info.Size()/512) - 1,
			Type:  gpt.LinuxFilesystem,
			Name:  "root",
		}},
	}
	part := 1
	if useMBR {
		table = &mbr.Table{
			LogicalSectorSize:  512,
			PhysicalSectorSize: 512,
			Partitions: []*mbr.Partition{
				{Index: 1, Start: 64, Size: 1024, Type: mbr.Linux},
				{Index: 2, Start: start, Size: uint32(info.Size() / 512), Type: mbr.Linux},
			},
		}
		part = 2
	}
	if err := d.Partition(table); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(raw)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := d.WritePartitionContents(part, f); err != nil {
		t.Fatal(err)
	}
}

// hostileTree is a rootfs with links out of the root, a loop, an oversized
// file and a FIFO.
func hostileTree(t testing.TB) string {
	t.Helper()
	tree := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(tree, "etc/ssh"), 0o755))
	must(os.WriteFile(filepath.Join(tree, "etc/passwd"), []byte("image:x:0:0::/:/bin/sh\n"), 0o644))
	must(os.WriteFile(filepath.Join(tree, "etc/ssh/sshd_config"), []byte("PermitRootLogin no\n"), 0o644))
	must(os.Symlink("/etc/passwd", filepath.Join(tree, "abs")))
	must(os.Symlink("../../../../../../etc/passwd", filepath.Join(tree, "etc/ssh/up")))
	must(os.Symlink("/etc", filepath.Join(tree, "etclink")))
	must(os.Symlink("loop2", filepath.Join(tree, "loop1")))
	must(os.Symlink("loop1", filepath.Join(tree, "loop2")))
	must(os.WriteFile(filepath.Join(tree, "big"), bytes.Repeat([]byte("x"), sysroot.DefaultMaxFileSize+1), 0o644))
	must(syscall.Mkfifo(filepath.Join(tree, "fifo"), 0o644))
	return tree
}

func formats(t *testing.T, tree string) map[string]string {
	dir := t.TempDir()
	raw := filepath.Join(dir, "disk.raw")
	mkfs(t, tree, raw)
	out := map[string]string{"raw": raw}
	toGPT(t, raw, filepath.Join(dir, "gpt.raw"))
	out["gpt"] = filepath.Join(dir, "gpt.raw")
	toMBR(t, raw, filepath.Join(dir, "mbr.raw"))
	out["mbr"] = filepath.Join(dir, "mbr.raw")
	if _, err := exec.LookPath("qemu-img"); err == nil {
		toQcow2(t, raw, filepath.Join(dir, "disk.qcow2"))
		toQcow2(t, out["gpt"], filepath.Join(dir, "gpt.qcow2"))
		toQcow2(t, out["mbr"], filepath.Join(dir, "mbr.qcow2"))
		out["qcow2"], out["gpt-qcow2"], out["mbr-qcow2"] = filepath.Join(dir, "disk.qcow2"), filepath.Join(dir, "gpt.qcow2"), filepath.Join(dir, "mbr.qcow2")
	} else {
		t.Log("qemu-img not installed; qcow2 untested")
	}
	return out
}

func TestHostileImage(t *testing.T) {
	tree := hostileTree(t)
	for kind, file := range formats(t, tree) {
		t.Run(kind, func(t *testing.T) {
			img, err := Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer img.Close()
			if (img.Offset != 0) != (strings.HasPrefix(kind, "gpt") || strings.HasPrefix(kind, "mbr")) {
				t.Errorf("filesystem found at byte %d", img.Offset)
			}
			fsys := img.FS()
			for _, name := range []string{"/abs", "/etc/ssh/up", "/etclink/passwd", "etclink/../etc/passwd"} {
				b, err := fsys.ReadFile(name)
				if err != nil || string(b) != "image:x:0:0::/:/bin/sh\n" {
					t.Errorf("%s: %q, %v; want the image's own /etc/passwd", name, b, err)
				}
			}
			if _, err := fsys.ReadFile("/loop1"); !errors.Is(err, syscall.ELOOP) {
				t.Errorf("link loop: %v, want ELOOP", err)
			}
			if _, err := fsys.ReadFile("/big"); !errors.Is(err, sysroot.ErrTooLarge) {
				t.Errorf("oversized file: %v, want ErrTooLarge", err)
			}
			if _, err := fsys.ReadFile("/fifo"); !errors.Is(err, sysroot.ErrNotRegular) {
				t.Errorf("fifo: %v, want ErrNotRegular", err)
			}
			if _, err := fsys.ReadFile("/etc/missing"); !sysroot.IsNotExist(err) || !strings.Contains(err.Error(), file+":/etc/missing") {
				t.Errorf("missing file: %v, want not-exist naming the image and the path", err)
			}
			if _, err := fsys.ReadFile("/etc/passwd/x"); !sysroot.IsNotExist(err) {
				t.Errorf("file as directory: %v, want not-exist", err)
			}
			info, err := fsys.Lstat("/abs")
			if err != nil || info.Mode()&os.ModeSymlink == 0 {
				t.Errorf("Lstat /abs: %v, %v; want a symlink", info, err)
			}
			info, err = fsys.Stat("/etclink")
			if err != nil || !info.IsDir() {
				t.Errorf("Stat /etclink: %v, %v; want the directory", info, err)
			}
			entries, err := fsys.ReadDir("/etclink/ssh")
			if err != nil || len(entries) != 2 || entries[0].Name() != "sshd_config" || entries[1].Name() != "up" {
				t.Errorf("ReadDir /etclink/ssh: %v, %v", entries, err)
			}
			if len(entries) == 0 {
				return
			}
			if info, err := entries[0].Info(); err != nil || info.Mode() != 0o644 || info.Size() != int64(len("PermitRootLogin no\n")) {
				t.Errorf("entry info of sshd_config: %v, %v; want a 0644 regular file of its size", info, err)
			}
			m, err := fsys.Glob("/etc/ssh/*")
			if err != nil || len(m) != 2 {
				t.Errorf("Glob: %v, %v", m, err)
			}
			if got := fsys.Display("etc/ssh/sshd_config"); got != "/etc/ssh/sshd_config" {
				t.Errorf("Display: %q", got)
			}
			if err := img.Err(); err != nil {
				t.Errorf("a sound image reports %v", err)
			}
		})
	}
}

func TestBrokenImages(t *testing.T) {
	tree := t.TempDir()
	if err := os.WriteFile(filepath.Join(tree, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	files := formats(t, tree)
	dir := t.TempDir()
	cases := map[string][]byte{
		"empty":            nil,
		"random":           bytes.Repeat([]byte{0x5a, 0xc3, 0x11, 0x07}, 1<<18),
		"qcow2 magic only": append([]byte("QFI\xfb"), make([]byte, 508)...),
	}
	for kind, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		cases["half "+kind] = b[:len(b)/2]
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
			if err := os.WriteFile(file, data, 0o644); err != nil {
				t.Fatal(err)
			}
			img, err := Open(file)
			if err == nil {
				// A qcow2 whose header survives can open; reading must then
				// fail, and Err must say so.
				walk(img.FS(), "/", 0)
				err = img.Err()
				img.Close()
			}
			if err == nil {
				t.Fatal("a broken image opened and read cleanly")
			}
			if !strings.Contains(err.Error(), file) {
				t.Errorf("error does not name the file: %v", err)
			}
		})
	}
}

// walk reads every file it can, as a scan would.
func walk(fsys sysroot.FS, dir string, depth int) {
	if depth > 8 {
		return
	}
	entries, _ := fsys.ReadDir(dir)
	for _, e := range entries {
		p := strings.TrimSuffix(dir, "/") + "/" + e.Name()
		if e.IsDir() {
			walk(fsys, p, depth+1)
			continue
		}
		fsys.ReadFile(p)
	}
}

func TestOpenMissing(t *testing.T) {
	_, err := Open(filepath.Join(t.TempDir(), "nope.qcow2"))
	if err == nil || !strings.Contains(err.Error(), "nope.qcow2") {
		t.Errorf("missing file: %v", err)
	}
	_, err = Open(t.TempDir())
	if err == nil {
		t.Error("a directory opened as an image")
	}
}

var _ io.Closer = (*Image)(nil)

// TestLoopingExtentTree: an extent tree whose index block points at itself
// must end in an error. go-diskfs alone would recurse until the stack
// overflows, which kills the process.
func TestLoopingExtentTree(t *testing.T) {
	if _, err := exec.LookPath("debugfs"); err != nil {
		t.Skip("debugfs not installed (e2fsprogs)")
	}
	tree := t.TempDir()
	if err := os.WriteFile(filepath.Join(tree, "f"), []byte("hello\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	img := filepath.Join(t.TempDir(), "loop.raw")
	if out, err := exec.Command("mkfs.ext4", "-q", "-b", "4096", "-d", tree, img, "8M").CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v\n%s", err, out)
	}
	// Block 1500 of 2048 is free in this filesystem: an extent index node
	// (magic 0xf30a, one entry, depth 1) whose only child is block 1500.
	const blk = 1500
	node := []byte{0x0a, 0xf3, 1, 0, 0x54, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, blk & 0xff, blk >> 8, 0, 0, 0, 0, 0, 0}
	f, err := os.OpenFile(img, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(node, blk*4096); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// The inode's own root node: the same, pointing at block 1500.
	for i, word := range []string{"0x0001f30a", "0x00010004", "0", "0", "1500", "0"} {
		cmd := fmt.Sprintf("sif /f block[%d] %s", i, word)
		if out, err := exec.Command("debugfs", "-w", "-R", cmd, img).CombinedOutput(); err != nil {
			t.Fatalf("debugfs %s: %v\n%s", cmd, err, out)
		}
	}
	im, err := Open(img)
	if err != nil {
		t.Fatal(err)
	}
	defer im.Close()
	_, err = im.FS().ReadFile("/f")
	// A regular file's tree is walked here, where a node must lie one
	// level below its parent, so the loop ends at its first step.
	if err == nil || !strings.Contains(err.Error(), "corrupt filesystem: inode 12: an extent tree node of depth 1 where 0 was due") || !strings.Contains(err.Error(), img+":/f") {
		t.Errorf("looping extent tree: %v, want the corrupt tree named, in %s:/f", err, img)
	}
	if err := im.Err(); err == nil || !strings.Contains(err.Error(), img) {
		t.Errorf("Err after a looping extent tree: %v, want the image named as corrupt", err)
	}
}
