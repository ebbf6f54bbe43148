package encryption

import (
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

// A disk image whose / is mounted from a crypttab mapping of a device the
// image does not hold is not encrypted: the line opens nothing at boot. A
// rootfs tree holds no devices, so there the mapping is all there is.
func TestCrypttabOfAnAbsentDevice(t *testing.T) {
	dir := collecttest.TempTree(t, map[string]string{
		"/etc/fstab":    "/dev/mapper/cryptroot / ext4 defaults 0 1\n",
		"/etc/crypttab": "cryptroot UUID=0b5a0000-dead-4bbb-8ccc-000000000000 none luks\n",
	})
	fsys := collecttest.OpenFS(t, dir)
	ct, err := parseCrypttab([]byte("cryptroot UUID=0b5a0000-dead-4bbb-8ccc-000000000000 none luks\n"))
	if err != nil {
		t.Fatal(err)
	}

	image := &facts.Encryption{Crypttab: append([]facts.CrypttabEntry(nil), ct...)}
	if err := offlineEncryption(fsys, image, nil, true); err != nil {
		t.Fatal(err)
	}
	if image.Root == nil || image.Root.Encrypted {
		t.Fatalf("an image with no volume the crypttab names: root %+v, want not encrypted", image.Root)
	}
	if !image.Crypttab[0].Absent {
		t.Errorf("the crypttab line of a device the image does not hold is not marked absent: %+v", image.Crypttab[0])
	}
	last := image.Root.Hops[len(image.Root.Hops)-1]
	if last.Kind != "absent" {
		t.Errorf("the chain ends at %+v, want the absent device", last)
	}

	tree := &facts.Encryption{Crypttab: append([]facts.CrypttabEntry(nil), ct...)}
	if err := offlineEncryption(fsys, tree, nil, false); err != nil {
		t.Fatal(err)
	}
	if !tree.Root.Encrypted || tree.Crypttab[0].Absent {
		t.Errorf("a rootfs tree, which holds no devices: root %+v, crypttab %+v", tree.Root, tree.Crypttab[0])
	}
}

// On a live host, a crypttab line whose device the host does not have is
// marked absent; one whose device is there is not.
func TestCrypttabAbsentLive(t *testing.T) {
	dir := collecttest.TempTreeOf(t, map[string]any{
		"dev/disk/by-uuid/1111-present": "",
		"dev/sda3":                      "",
	})
	ct := []facts.CrypttabEntry{
		{Name: "here", Device: "UUID=1111-present"},
		{Name: "gone", Device: "UUID=2222-missing"},
		{Name: "path", Device: "/dev/sda3"},
		{Name: "gonepath", Device: "/dev/sdz9"},
	}
	markAbsentLive(collecttest.OpenFS(t, dir), ct)
	for _, c := range ct {
		want := c.Name == "gone" || c.Name == "gonepath"
		if c.Absent != want {
			t.Errorf("%s (%s): absent %v, want %v", c.Name, c.Device, c.Absent, want)
		}
	}
}
