package target

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/diskfs/go-diskfs"
	"github.com/diskfs/go-diskfs/partition/gpt"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/policies"
	"github.com/gpuhost/gpuhost/target/diskimage"
)

// lvmOnLUKSTree is the rootfs of an Ubuntu "LVM with encryption" install:
// / on ubuntu-vg/ubuntu-lv, whose PV is the crypttab mapping dm_crypt-0 of
// the LUKS volume that crypttab names as dev.
func lvmOnLUKSTree(t *testing.T, dev func(uuid string) string, uuid string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tree")
	files := map[string]string{
		"etc/os-release": "ID=ubuntu\nVERSION_ID=\"24.04\"\n",
		"etc/fstab":      "/dev/disk/by-id/dm-uuid-LVM-Xy12abcd34ef56gh78ij90kl12mn34opSt56UvWx78Yz90Ab12Cd34Ef56Gh78Ij / ext4 defaults 0 1\n",
		"etc/crypttab":   "dm_crypt-0 " + dev(uuid) + " none luks,discard\n",
		"etc/lvm/backup/ubuntu-vg": "contents = \"Text Format Volume Group\"\nversion = 1\n\nubuntu-vg {\n" +
			"\tid = \"Xy12ab-cd34-ef56-gh78-ij90-kl12-mn34op\"\n\tseqno = 2\n" +
			"\tphysical_volumes {\n\t\tpv0 {\n\t\t\tid = \"Ab12Cd\"\n\t\t\tdevice = \"/dev/mapper/dm_crypt-0\"\t# Hint only\n\t\t}\n\t}\n" +
			"\tlogical_volumes {\n\t\tubuntu-lv {\n\t\t\tid = \"St56Uv-Wx78-Yz90-Ab12-Cd34-Ef56-Gh78Ij\"\n" +
			"\t\t\tsegment1 {\n\t\t\t\ttype = \"striped\"\n\t\t\t\tstripes = [\n\t\t\t\t\t\"pv0\", 0\n\t\t\t\t]\n\t\t\t}\n\t\t}\n\t}\n}\n",
	}
	return writeFiles(t, dir, files)
}

// luksImage builds a GPT disk whose first partition is the ext4 tree and
// whose second is a LUKS2 volume cryptsetup formatted with keyBits, which
// the tree's crypttab names as dev gives it.
func luksImage(t *testing.T, keyBits int, dev func(uuid string) string) string {
	t.Helper()
	mkfs := testutil.Tool(t, "mkfs.ext4", "e2fsprogs")
	vol, uuid := testutil.LUKSFormat(t, "luks2", "aes-xts-plain64", keyBits)
	dir := t.TempDir()
	root := filepath.Join(dir, "root.raw")
	testutil.Run(t, time.Minute, mkfs, "-q", "-d", lvmOnLUKSTree(t, dev, uuid), root, "16M")

	return twoPartitionDisk(t, filepath.Join(dir, "disk.raw"), root, vol,
		&gpt.Partition{Type: gpt.LinuxFilesystem, Name: "root"},
		&gpt.Partition{Type: gpt.LinuxFilesystem, Name: "crypt", GUID: "5E1C0F7A-2B7E-4D5E-9A4E-1F0C2E3D4B5A"})
}

// twoPartitionDisk writes img, a GPT disk of a 16 MiB partition holding
// the file first and a 20 MiB one holding second, with the types, names
// and GUIDs of p1 and p2.
func twoPartitionDisk(t *testing.T, img, first, second string, p1, p2 *gpt.Partition) string {
	t.Helper()
	const start, mib = 2048, 2048 // sectors
	d, err := diskfs.Create(img, (start+16*mib+20*mib+2048)*512, diskfs.SectorSizeDefault)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	p1.Index, p1.Start, p1.End = 1, start, start+16*mib-1
	p2.Index, p2.Start, p2.End = 2, start+16*mib, start+36*mib-1
	table := &gpt.Table{LogicalSectorSize: 512, PhysicalSectorSize: 512, ProtectiveMBR: true, Partitions: []*gpt.Partition{p1, p2}}
	if err := d.Partition(table); err != nil {
		t.Fatal(err)
	}
	for i, src := range []string{first, second} {
		f, err := os.Open(src)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.WritePartitionContents(i+1, f); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	return img
}

// TestImageLUKSCipher scans a disk image as the gate does: the root's chain
// is followed through LVM and crypttab to the LUKS partition, whose header
// gives the cipher, and GH-ENC-003 judges its key.
func TestImageLUKSCipher(t *testing.T) {
	src, err := engine.LoadFS(policies.FS, "embedded")
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	e, err := engine.New(ctx, engine.WithSource(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		bits   int
		status string
		dev    func(string) string
	}{
		{512, "pass", func(uuid string) string { return "UUID=" + uuid }},
		{256, "fail", func(string) string { return "PARTLABEL=crypt" }},
		{512, "pass", func(string) string { return "/dev/disk/by-partuuid/5e1c0f7a-2b7e-4d5e-9a4e-1f0c2e3d4b5a" }},
	} {
		f, err := Image(ctx, luksImage(t, tc.bits, tc.dev), Options{Now: time.Now()})
		if err != nil {
			t.Fatal(err)
		}
		if st := f.Collectors["encryption"]; st.Status != facts.StatusOK {
			t.Fatalf("encryption collector: %+v", st)
		}
		r := f.Encryption.Root
		if r == nil || !r.Encrypted || len(r.Hops) != 3 || r.Hops[2].Name != "partition 2" || r.Hops[2].Learned != "luks-header" {
			t.Fatalf("root %+v", r)
		}
		if c := r.Hops[1].Crypt; c == nil || c.Cipher != "aes-xts-plain64" || c.KeyBits != tc.bits || c.Type != "luks2" {
			t.Errorf("crypt %+v, want aes-xts-plain64 with %d bits from the header", c, tc.bits)
		}
		doc, _, err := engine.NewDocument(f)
		if err != nil {
			t.Fatal(err)
		}
		results, err := e.Evaluate(ctx, doc)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, res := range results {
			got[res.ID] = res.Status + " " + strings.Join(res.Messages, "; ")
		}
		if !strings.HasPrefix(got["GH-ENC-001"], "pass") {
			t.Errorf("%d bits: GH-ENC-001 %s", tc.bits, got["GH-ENC-001"])
		}
		if !strings.HasPrefix(got["GH-ENC-003"], tc.status) {
			t.Errorf("%d bits: GH-ENC-003 %s, want %s", tc.bits, got["GH-ENC-003"], tc.status)
		}
		if tc.status == "fail" && !strings.Contains(got["GH-ENC-003"], "dm_crypt-0") {
			t.Errorf("message does not name the device: %s", got["GH-ENC-003"])
		}
	}
}

// encryptedRootImage builds a disk as the gpuhost-rootfs builder does with
// encryption: partition 1 an ext4 /boot (no OS in it), partition 2 the
// root, typed as the x86-64 root, a LUKS2 volume. It returns the disk and
// the volume's UUID.
func encryptedRootImage(t *testing.T) (string, string) {
	t.Helper()
	mkfs := testutil.Tool(t, "mkfs.ext4", "e2fsprogs")
	vol, uuid := testutil.LUKSFormat(t, "luks2", "aes-xts-plain64", 512)
	dir := t.TempDir()
	boot := filepath.Join(dir, "boot.raw")
	bootTree := filepath.Join(dir, "boot")
	if err := os.MkdirAll(filepath.Join(bootTree, "grub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bootTree, "grub/grub.cfg"), []byte("set default=0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Run(t, time.Minute, mkfs, "-q", "-d", bootTree, boot, "16M")
	img := twoPartitionDisk(t, filepath.Join(dir, "disk.raw"), boot, vol,
		&gpt.Partition{Type: gpt.LinuxFilesystem, Name: "boot"},
		&gpt.Partition{Type: gpt.Type("4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709"), Name: "root"})
	return img, uuid
}

// encryptedTree is the rootfs tree an encrypted root was made from: / on
// the crypttab mapping of the LUKS volume uuid.
func encryptedTree(t *testing.T, uuid string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tree")
	files := map[string]string{
		"etc/os-release": "ID=debian\nVERSION_ID=\"12\"\n",
		"etc/fstab":      "/dev/mapper/luks-" + uuid + " / ext4 errors=remount-ro 0 1\n",
		"etc/crypttab":   "luks-" + uuid + " UUID=" + uuid + " none luks,discard,tpm2-device=auto\n",
	}
	return writeFiles(t, dir, files)
}

// TestImageEncryptedRoot: a disk whose root is a LUKS2 volume is never
// judged by its /boot, the one ext4 it has. Alone, the scan refuses it,
// saying why and what to give; with the tree the volume was made from
// (ImageRootfs), the files come from the tree and the encryption from the
// disk's LUKS header, so GH-ENC-001 and GH-ENC-003 pass on what the disk
// really is. A tree whose crypttab opens another volume, and a tree given
// for a disk whose root is readable, are refused.
func TestImageEncryptedRoot(t *testing.T) {
	ctx := context.Background()
	img, uuid := encryptedRootImage(t)
	_, err := Image(ctx, img, Options{Now: time.Now()})
	var encErr *diskimage.EncryptedRootError
	if !errors.As(err, &encErr) || encErr.UUID != uuid || encErr.Partition.Index != 2 || !strings.Contains(err.Error(), "the rootfs tree it was made from") {
		t.Fatalf("a disk with an encrypted root, scanned alone: %v", err)
	}

	f, err := Image(ctx, img, Options{Now: time.Now(), ImageRootfs: encryptedTree(t, uuid)})
	if err != nil {
		t.Fatal(err)
	}
	if f.OS == nil || f.OS.ID != "debian" {
		t.Errorf("os %+v: not read from the tree", f.OS)
	}
	r := f.Encryption.Root
	if r == nil || !r.Encrypted || len(r.Hops) != 2 || r.Hops[1].Learned != "luks-header" || r.Hops[1].Name != "partition 2" {
		t.Fatalf("root %+v", r)
	}
	if c := r.Hops[0].Crypt; c == nil || c.Cipher != "aes-xts-plain64" || c.KeyBits != 512 || c.Type != "luks2" || c.Source != "file" {
		t.Errorf("crypt %+v, want aes-xts-plain64 with 512 bits from the disk's header", c)
	}
	src, err := engine.LoadFS(policies.FS, "embedded")
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.New(ctx, engine.WithSource(src))
	if err != nil {
		t.Fatal(err)
	}
	doc, _, err := engine.NewDocument(f)
	if err != nil {
		t.Fatal(err)
	}
	results, err := e.Evaluate(ctx, doc)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range results {
		if (res.ID == "GH-ENC-001" || res.ID == "GH-ENC-003") && res.Status != "pass" {
			t.Errorf("%s %s: %v", res.ID, res.Status, res.Messages)
		}
	}

	other, _ := encryptedRootImage(t)
	if _, err := Image(ctx, other, Options{ImageRootfs: encryptedTree(t, uuid)}); err == nil || !strings.Contains(err.Error(), "is not the tree this disk was made from") {
		t.Errorf("another disk's tree: %v", err)
	}
	plain := luksImage(t, 512, func(u string) string { return "UUID=" + u })
	if _, err := Image(ctx, plain, Options{ImageRootfs: encryptedTree(t, uuid)}); err == nil || !strings.Contains(err.Error(), "is not encrypted") {
		t.Errorf("a tree for a disk whose root is readable: %v", err)
	}
}

// ImageFiles, which sbom image reads packages through, opens an encrypted
// root's files from its tree as Image does, and refuses the disk alone
// and another disk's tree the same way.
func TestImageFilesEncryptedRoot(t *testing.T) {
	ctx := context.Background()
	img, uuid := encryptedRootImage(t)
	var encErr *diskimage.EncryptedRootError
	if _, _, err := ImageFiles(ctx, img, Options{}); !errors.As(err, &encErr) {
		t.Fatalf("the disk alone: %v", err)
	}
	fsys, done, err := ImageFiles(ctx, img, Options{ImageRootfs: encryptedTree(t, uuid)})
	if err != nil {
		t.Fatal(err)
	}
	data, err := fsys.ReadFileLimit("/etc/os-release", 1<<10)
	if err != nil || !strings.Contains(string(data), "ID=debian") {
		t.Errorf("os-release %q, %v: not the tree's", data, err)
	}
	if err := done(); err != nil {
		t.Errorf("done: %v", err)
	}
	other, _ := encryptedRootImage(t)
	if _, _, err := ImageFiles(ctx, other, Options{ImageRootfs: encryptedTree(t, uuid)}); err == nil || !strings.Contains(err.Error(), "is not the tree this disk was made from") {
		t.Errorf("another disk's tree: %v", err)
	}
}

// writeFiles writes files (path: body) under dir and returns dir.
func writeFiles(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
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
