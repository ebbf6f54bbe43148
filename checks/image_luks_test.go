package checks

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/diskfs/go-diskfs"
	"github.com/diskfs/go-diskfs/partition/gpt"

	"github.com/gpuhost/gpuhost/checks/facts"
	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/policies"
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

	img := filepath.Join(dir, "disk.raw")
	const start, mib = 2048, 2048 // sectors
	d, err := diskfs.Create(img, (start+16*mib+20*mib+2048)*512, diskfs.SectorSizeDefault)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	table := &gpt.Table{LogicalSectorSize: 512, PhysicalSectorSize: 512, ProtectiveMBR: true, Partitions: []*gpt.Partition{
		{Index: 1, Start: start, End: start + 16*mib - 1, Type: gpt.LinuxFilesystem, Name: "root"},
		{Index: 2, Start: start + 16*mib, End: start + 36*mib - 1, Type: gpt.LinuxFilesystem, Name: "crypt", GUID: "5E1C0F7A-2B7E-4D5E-9A4E-1F0C2E3D4B5A"},
	}}
	if err := d.Partition(table); err != nil {
		t.Fatal(err)
	}
	for i, src := range []string{root, vol} {
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
