package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/diskfs/go-diskfs"
	"github.com/diskfs/go-diskfs/partition/gpt"
	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// decoyDisk is a GPT disk whose first, larger partition holds the
// hardened tree and whose second holds the weak one: both OS trees, with
// nothing in the table to say which boots.
func decoyDisk(t *testing.T) string {
	t.Helper()
	mkfs := testutil.Tool(t, "mkfs.ext4", "e2fsprogs")
	dir := t.TempDir()
	trees := []struct{ tree, size string }{{"testdata/rootfs-hardened", "40M"}, {"testdata/rootfs-weak", "24M"}}
	const mib = 2048 // sectors
	img := filepath.Join(dir, "decoy.raw")
	d, err := diskfs.Create(img, (2048+64*mib+2048)*512, diskfs.SectorSizeDefault)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	table := &gpt.Table{LogicalSectorSize: 512, PhysicalSectorSize: 512, ProtectiveMBR: true, Partitions: []*gpt.Partition{
		{Index: 1, Start: 2048, End: 2048 + 40*mib - 1, Type: gpt.LinuxFilesystem, Name: "decoy"},
		{Index: 2, Start: 2048 + 40*mib, End: 2048 + 64*mib - 1, Type: gpt.LinuxFilesystem, Name: "root"},
	}}
	if err := d.Partition(table); err != nil {
		t.Fatal(err)
	}
	for i, tr := range trees {
		raw := filepath.Join(dir, filepath.Base(tr.tree)+".raw")
		if out, err := exec.Command(mkfs, "-q", "-d", tr.tree, raw, tr.size).CombinedOutput(); err != nil {
			t.Fatalf("mkfs.ext4: %v\n%s", err, out)
		}
		f, err := os.Open(raw)
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

// TestScanImageDecoy: the largest partition was scanned, so a hardened
// decoy beside a weak root passed. Now the scan cannot be trusted (exit 2)
// until --root-partition names the root, and then judges that one.
func TestScanImageDecoy(t *testing.T) {
	img := decoyDisk(t)
	scanImage := func(a *app) *cobra.Command { return a.scanImageCommand() }
	factsImage := func(a *app) *cobra.Command { return a.factsImageCommand() }
	params := "--params=testdata/params-demo.yaml"
	for _, build := range []func(*app) *cobra.Command{scanImage, factsImage} {
		args := []string{img}
		if o := runCommand(t, build, args...); o.code != 2 {
			t.Errorf("decoy disk: exit %d, want 2\n%s", o.code, o.stderr)
		} else if !strings.Contains(o.stderr, img) || !strings.Contains(o.stderr, "partition 1 (ext4, 40 MiB, os-release") ||
			!strings.Contains(o.stderr, "partition 2 (ext4, 24 MiB, os-release") || !strings.Contains(o.stderr, "--root-partition N") {
			t.Errorf("the error does not name the image, both candidates and the flag:\n%s", o.stderr)
		}
		if o := runCommand(t, build, append(args, "--root-partition", "3")...); o.code != 2 || !strings.Contains(o.stderr, "no such partition") {
			t.Errorf("--root-partition 3: exit %d\n%s", o.code, o.stderr)
		}
	}
	weak := runCommand(t, scanImage, img, params, "--root-partition", "2", "--format", "json")
	want := runCommand(t, (*app).scanCommand, "rootfs", "testdata/rootfs-weak", params, "--format", "json")
	if weak.code != 1 || want.code != 1 {
		t.Fatalf("the weak root: exit %d, its rootfs %d\n%s", weak.code, want.code, weak.stderr)
	}
	got, exp := imageStatuses(t, weak), imageStatuses(t, want)
	for id, st := range exp {
		if got[id] != st {
			t.Errorf("%s is %q on partition 2, %q in the weak rootfs", id, got[id], st)
		}
	}
	// The hardened tree's crypttab maps / to a LUKS volume this plain disk
	// does not hold: GH-ENC-001 fails for it, and nothing else does. The
	// CIS file checks are left out: the disk has the owners and modes of
	// a checkout, which git does not keep.
	hardened := runCommand(t, scanImage, img, params, "--root-partition", "1", "--format", "json", "--skip-checks", "fs")
	failed := map[string]bool{}
	for id, st := range imageStatuses(t, hardened) {
		if st == "fail" || st == "error" {
			failed[id] = true
		}
	}
	if hardened.code != 1 || len(failed) != 1 || !failed["GH-ENC-001"] {
		t.Errorf("the hardened partition: exit %d, failing %v; want 1 with GH-ENC-001 alone\n%s", hardened.code, failed, hardened.stderr)
	}
}

// TestScanImageBacking: an overlay over a host file is refused, naming the
// reference, unless --allow-backing names the directory it lies in.
func TestScanImageBacking(t *testing.T) {
	raw, _ := buildImage(t, "testdata/rootfs-weak")
	qemu := testutil.Tool(t, "qemu-img", "qemu-utils")
	overlay := filepath.Join(filepath.Dir(raw), "overlay.qcow2")
	if out, err := exec.Command(qemu, "create", "-q", "-f", "qcow2", "-b", "weak.raw", "-F", "raw", overlay).CombinedOutput(); err != nil {
		t.Fatalf("qemu-img: %v\n%s", err, out)
	}
	scanImage := func(a *app) *cobra.Command { return a.scanImageCommand() }
	factsImage := func(a *app) *cobra.Command { return a.factsImageCommand() }
	for _, build := range []func(*app) *cobra.Command{scanImage, factsImage} {
		o := runCommand(t, build, overlay)
		if o.code != 2 || !strings.Contains(o.stderr, overlay) || !strings.Contains(o.stderr, `names the backing file "weak.raw"`) {
			t.Errorf("overlay: exit %d\n%s", o.code, o.stderr)
		}
		elsewhere := t.TempDir()
		if o := runCommand(t, build, overlay, "--allow-backing", elsewhere); o.code != 2 || !strings.Contains(o.stderr, "lies outside the backing files' directory") {
			t.Errorf("another directory allowed: exit %d\n%s", o.code, o.stderr)
		}
	}
	if o := runCommand(t, scanImage, overlay, "--allow-backing", filepath.Dir(raw)); o.code != 1 {
		t.Errorf("allowed overlay: exit %d, want the weak tree's 1\n%s", o.code, o.stderr)
	}
	if o := runCommand(t, factsImage, overlay, "--allow-backing", filepath.Dir(raw)); o.code != 0 || !strings.Contains(o.stdout, `"kind": "image"`) {
		t.Errorf("facts of the allowed overlay: exit %d\n%s", o.code, o.stderr)
	}
}
