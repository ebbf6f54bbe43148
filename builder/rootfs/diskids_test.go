package rootfs

import (
	"regexp"
	"testing"
)

// TestSeededDiskIDsRepeat derives a disk's identifiers twice from one
// seed: the same each time, every one of them different from the others,
// shaped as the version 4 UUIDs sfdisk and mkfs take, and not those of
// another seed. Without a seed two layouts share none.
func TestSeededDiskIDsRepeat(t *testing.T) {
	layout := func(d diskIDs) []string {
		t.Helper()
		luks, err := newLUKSRoot(d)
		if err != nil {
			t.Fatal(err)
		}
		l, err := newDiskLayout(1<<30, luks, d)
		if err != nil {
			t.Fatal(err)
		}
		return []string{l.DiskGUID, l.BIOSPartUUID, l.ESPPartUUID, l.RootPartUUID, l.RootFSUUID, l.BootPartUUID, l.BootFSUUID, luks.UUID, l.ESPVolumeID}
	}
	v4 := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seeded := diskIDs{seed: []byte("release-2026.12")}
	a, b := layout(seeded), layout(seeded)
	other := layout(diskIDs{seed: []byte("release-2026.13")})
	r1, r2 := layout(diskIDs{}), layout(diskIDs{})
	seen := map[string]bool{}
	for i := range a {
		if a[i] != b[i] {
			t.Errorf("identifier %d: %s, then %s from the same seed", i, a[i], b[i])
		}
		if a[i] == other[i] || r1[i] == r2[i] {
			t.Errorf("identifier %d repeats across seeds (%s, %s) or random draws (%s, %s)", i, a[i], other[i], r1[i], r2[i])
		}
		if seen[a[i]] {
			t.Errorf("identifier %d (%s) is another one's too", i, a[i])
		}
		seen[a[i]] = true
		if i < len(a)-1 && !v4.MatchString(a[i]) {
			t.Errorf("identifier %d is %q, not a version 4 UUID", i, a[i])
		}
	}
	if !regexp.MustCompile(`^[0-9A-F]{8}$`).MatchString(a[len(a)-1]) {
		t.Errorf("the ESP's volume id is %q", a[len(a)-1])
	}
}
