package target

import (
	"context"
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
)

// espDisk writes img, a GPT disk of the ESP file esp and the root file
// system root, laid out as the gpuhost-rootfs builder lays out a disk.
func espDisk(t *testing.T, img, esp, root string) string {
	t.Helper()
	const start, mib = 2048, 2048 // sectors
	sizeOf := func(f string) int64 {
		info, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		return (info.Size() + mib*512 - 1) / (mib * 512) * mib
	}
	espSectors, rootSectors := sizeOf(esp), sizeOf(root)
	d, err := diskfs.Create(img, (start+espSectors+rootSectors+2048)*512, diskfs.SectorSizeDefault)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	table := &gpt.Table{LogicalSectorSize: 512, PhysicalSectorSize: 512, ProtectiveMBR: true, Partitions: []*gpt.Partition{
		{Index: 1, Start: start, End: start + uint64(espSectors) - 1, Type: gpt.EFISystemPartition, Name: "esp"},
		{Index: 2, Start: start + uint64(espSectors), End: start + uint64(espSectors+rootSectors) - 1, Type: gpt.LinuxFilesystem, Name: "root"},
	}}
	if err := d.Partition(table); err != nil {
		t.Fatal(err)
	}
	for i, src := range []string{esp, root} {
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

// TestImageSecureBoot scans a disk built like today's Debian image (GRUB's
// unsigned core image as EFI/BOOT/BOOTX64.EFI, no shim), with a kernel
// and the NVIDIA modules signed, and the DKMS certificate: by default the
// image is not meant for Secure Boot and GH-SB-001 and GH-SB-002 skip;
// with params.secure_boot_required GH-SB-001 fails naming BOOTX64.EFI and
// GH-SB-002 passes. The root is not sealed to a TPM2, so GH-SB-003 skips.
func TestImageSecureBoot(t *testing.T) {
	mkfs := testutil.Tool(t, "mkfs.ext4", "e2fsprogs")
	work := t.TempDir()
	key, cert := testutil.SigningKey(t, work, "gpuhost test signing key")
	grub := testutil.GRUBImage(t, work)
	tree := filepath.Join(work, "tree")
	const release = "6.1.0-28-amd64"
	kernel := filepath.Join(tree, "boot", "vmlinuz-"+release)
	module := filepath.Join(tree, "lib/modules", release, "updates/dkms/nvidia.ko")
	writeFiles(t, tree, map[string]string{
		"etc/os-release": "ID=debian\nVERSION_ID=\"12\"\n", "etc/fstab": "UUID=0b5a / ext4 defaults 0 1\n",
		"lib/modules/" + release + "/updates/dkms/nvidia.ko": strings.Repeat("nvidia module body\n", 4096),
	})
	for _, dir := range []string{"var/lib/dkms", "boot"} {
		if err := os.MkdirAll(filepath.Join(tree, dir), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testutil.SBSign(t, key, cert, grub, kernel)
	testutil.SignModule(t, key, cert, module)
	testutil.Run(t, time.Minute, "cp", cert, filepath.Join(tree, "var/lib/dkms/mok.pub"))
	root := filepath.Join(work, "root.ext4")
	testutil.Run(t, time.Minute, mkfs, "-q", "-d", tree, root, "16M")
	img := espDisk(t, filepath.Join(work, "disk.raw"), testutil.ESPImage(t, map[string]string{"/EFI/BOOT/BOOTX64.EFI": grub}), root)

	ctx := context.Background()
	f, err := Image(ctx, img, Options{Now: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if st := f.Collectors["secureboot"]; st.Status != facts.StatusOK {
		t.Fatalf("secureboot collector: %+v", st)
	}
	sb := f.SecureBoot
	if sb.ESP != "partition 1" || sb.ESPError != "" || len(sb.BootFiles) != 2 || len(sb.Modules) != 1 || sb.Modules[0].VerifiedBy != "/var/lib/dkms/mok.pub" {
		t.Fatalf("secure boot facts %+v", sb)
	}
	src, err := engine.LoadFS(policies.FS, "embedded")
	if err != nil {
		t.Fatal(err)
	}
	doc, _, err := engine.NewDocument(f)
	if err != nil {
		t.Fatal(err)
	}
	skipped := "skip the image does not boot with Secure Boot (no shim on the ESP) and params.secure_boot_required is false"
	for _, tc := range []struct {
		params map[string]any
		want   map[string]string
	}{
		{nil, map[string]string{"GH-SB-001": skipped, "GH-SB-002": skipped}},
		{map[string]any{"secure_boot_required": true}, map[string]string{
			"GH-SB-001": "fail partition 1:/EFI/BOOT/BOOTX64.EFI (grub) carries no Authenticode signature: Secure Boot refuses to load it",
			"GH-SB-002": "pass ",
		}},
	} {
		e, err := engine.New(ctx, engine.WithSource(src), engine.WithParams(tc.params))
		if err != nil {
			t.Fatal(err)
		}
		results, err := e.Evaluate(ctx, doc)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, r := range results {
			got[r.ID] = r.Status + " " + strings.Join(r.Messages, "; ")
		}
		for id, want := range tc.want {
			if got[id] != want {
				t.Errorf("params %v: %s is %q, want %q", tc.params, id, got[id], want)
			}
		}
		if !strings.HasPrefix(got["GH-SB-003"], "skip the root is not sealed to a TPM2") || !strings.HasPrefix(got["GH-SB-004"], "skip not applicable to image targets") {
			t.Errorf("params %v: GH-SB-003 %q, GH-SB-004 %q", tc.params, got["GH-SB-003"], got["GH-SB-004"])
		}
	}
}
