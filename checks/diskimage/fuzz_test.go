package diskimage

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
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
