package diskimage

import (
	"encoding/binary"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// TestRootInodeNotADirectory: the kernel refuses to mount a filesystem
// whose root inode is not a directory; so does Open.
func TestRootInodeNotADirectory(t *testing.T) {
	debugfs := testutil.Tool(t, "debugfs", "e2fsprogs")
	for _, flags := range [][]string{nil, {"-b", "1024"}} {
		raw := ext4Of(t, osTree(t, "weak", nil), "8M", flags...)
		testutil.Run(t, time.Minute, debugfs, "-w", "-R", "sif <2> mode 0100644", raw)
		mustFail(t, Options{}, raw, "the root inode (2) is not a directory (mode 0100644)")
		mustFail(t, Options{}, convert(t, raw), "the root inode (2) is not a directory")
	}
}

// TestExt4Superblock patches superblock fields, each past what the kernel
// accepts. The check runs before go-diskfs verifies the superblock's
// checksum, so its own error is the one seen.
func TestExt4Superblock(t *testing.T) {
	raw := ext4Of(t, osTree(t, "weak", nil), "8M", "-b", "4096")
	mustRead(t, Options{}, raw, "weak")
	sb := readFile(t, raw)[1024:2048]
	le := binary.LittleEndian
	u32 := func(off int, v uint32) map[int64][]byte {
		return map[int64][]byte{int64(1024 + off): le.AppendUint32(nil, v)}
	}
	u16 := func(off int, v uint16) map[int64][]byte {
		return map[int64][]byte{int64(1024 + off): le.AppendUint16(nil, v)}
	}
	blocks, ipg, bpg := le.Uint32(sb[4:]), le.Uint32(sb[0x28:]), le.Uint32(sb[0x20:])
	for name, c := range map[string]struct {
		patch map[int64][]byte
		err   string
	}{
		"block size":          {u32(0x18, 7), "block size 2^7 KiB"},
		"blocks past the end": {u32(4, blocks+1), "truncated: the ext4 filesystem needs"},
		"blocks per group 0":  {u32(0x20, 0), "0 blocks per group"},
		"blocks per group":    {u32(0x20, 8*4096+1), "32769 blocks per group"},
		"inodes per group":    {u32(0x28, 8*4096+1), "inodes per group"},
		"inodes count":        {u32(0, ipg*((blocks+bpg-1)/bpg)+1), "inodes, but"},
		"inode size":          {u16(0x58, 100), "inode size 100"},
		"inode size odd":      {u16(0x58, 384), "inode size 384"},
		"revision":            {u32(0x4c, 2), "revision 2"},
		"unknown incompat":    {u32(0x60, le.Uint32(sb[0x60:])|0x1000), "incompatible features 0x1000"},
		"needs recovery":      {u32(0x60, le.Uint32(sb[0x60:])|incompatRecover), "journal needs recovery"},
		"first data block":    {u32(0x14, blocks), "first data block"},
	} {
		t.Run(name, func(t *testing.T) { mustFail(t, Options{}, patched(t, raw, c.patch), c.err) })
	}
	// At the limits: 8 × block size blocks per group is what mkfs uses.
	if bpg != 8*4096 {
		t.Errorf("mkfs wrote %d blocks per group", bpg)
	}
}

// TestGroupDescriptors: a group whose inode table lies outside the
// filesystem is refused, as the kernel does at mount.
func TestGroupDescriptors(t *testing.T) {
	raw := ext4Of(t, osTree(t, "weak", nil), "8M", "-O", "^64bit", "-b", "4096")
	// The table follows the superblock, in block 1; the inode table of
	// group 0 is its third word.
	mustFail(t, Options{}, patched(t, raw, map[int64][]byte{4096 + 8: binary.LittleEndian.AppendUint32(nil, 1<<30)}), "the inode table of group 0 at block 1073741824 lies outside")
}

// TestInodeTypeDisagreesWithEntry: go-diskfs walks directories by their
// entries' file types and reads each inode by its own, so an inode whose
// mode said another type than its entry (e2fsck flags it; the kernel goes
// by the inode) was read as the entry said, and a damaged image was judged
// like a clean one. Such an image is refused once a lookup lists the
// directory holding the entry, naming the entry.
func TestInodeTypeDisagreesWithEntry(t *testing.T) {
	debugfs := testutil.Tool(t, "debugfs", "e2fsprogs")
	e2fsck := testutil.Tool(t, "e2fsck", "e2fsprogs")
	tree := osTree(t, "weak", nil)
	// A fast symlink keeps its target in the inode, a slow one in a block.
	for name, target := range map[string]string{"etc/fast": "os-release", "etc/slow": strings.Repeat("x", 80)} {
		if err := os.Symlink(target, filepath.Join(tree, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := unix.Mkfifo(filepath.Join(tree, "etc/fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	clean := ext4Of(t, tree, "8M")
	if out, err := exec.Command(e2fsck, "-fn", clean).CombinedOutput(); err != nil {
		t.Fatalf("e2fsck on the clean image: %v\n%s", err, out)
	}
	im := mustRead(t, Options{}, clean, "weak")
	walk(im.FS(), "/", 0)
	if err := im.Err(); err != nil {
		t.Fatalf("the clean image: %v", err)
	}

	for _, c := range []struct {
		name, path, mode string
		want             []string
	}{
		{"directory whose inode is a FIFO", "/etc", "010755", []string{"readdir .: etc: its directory entry says a directory, but inode", "is a FIFO (mode 010755)"}},
		{"regular file whose inode is a directory", "/etc/ssh/sshd_config", "040644", []string{"readdir etc/ssh: etc/ssh/sshd_config: its directory entry says a regular file, but inode", "is a directory (mode 040644)"}},
		{"fast symlink whose inode is a regular file", "/etc/fast", "0100777", []string{"readdir etc: etc/fast: its directory entry says a symbolic link, but inode", "is a regular file (mode 0100777)"}},
		{"slow symlink whose inode is a regular file", "/etc/slow", "0100777", []string{"readdir etc: etc/slow: its directory entry says a symbolic link, but inode", "is a regular file (mode 0100777)"}},
		{"regular file whose inode has no type", "/etc/os-release", "0644", []string{"readdir etc: etc/os-release: inode", "has mode 0644, of no file type"}},
		{"regular file whose inode has an unknown type", "/etc/os-release", "0170644", []string{"has mode 0170644, of no file type"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw := writeFile(t, t.TempDir(), "fs.raw", readFile(t, clean))
			testutil.Run(t, time.Minute, debugfs, "-w", "-R", "sif "+c.path+" mode "+c.mode, raw)
			if out, err := exec.Command(e2fsck, "-fn", raw).CombinedOutput(); err == nil {
				t.Fatalf("e2fsck finds nothing wrong:\n%s", out)
			}
			mustFail(t, Options{}, raw, c.want...)
		})
	}

	// A read through the damaged directory, or beside a damaged entry,
	// fails itself, naming the path read.
	for _, damage := range []string{"sif /etc mode 010755", "sif /etc/slow mode 0100777"} {
		raw := writeFile(t, t.TempDir(), "fs.raw", readFile(t, clean))
		testutil.Run(t, time.Minute, debugfs, "-w", "-R", damage, raw)
		im, err := Open(raw)
		if err != nil {
			t.Fatal(err)
		}
		defer im.Close()
		if _, err := im.FS().ReadFile("/etc/ssh/sshd_config"); err == nil || !strings.Contains(err.Error(), raw+":/etc/ssh/sshd_config") {
			t.Errorf("%s: reading /etc/ssh/sshd_config: %v", damage, err)
		}
		if err := im.Err(); err == nil {
			t.Errorf("%s: the image reports no damage", damage)
		}
	}
}
