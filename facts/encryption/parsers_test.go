package encryption

import (
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

func TestParseCrypttab(t *testing.T) {
	ct, err := parseCrypttab([]byte("# c\n\nroot_crypt UUID=aa-bb none luks,discard,,\nhome PARTUUID=cc /etc/keys/home.key\nswap LABEL=sw\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(ct) != 3 || strings.Join(ct[0].Options, ",") != "luks,discard" || ct[1].KeyFile != "/etc/keys/home.key" || ct[2].Options == nil || ct[2].Device != "LABEL=sw" {
		t.Errorf("%+v", ct)
	}
	if _, err := parseCrypttab([]byte("ok /dev/sda1\nonlyname\n")); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("one field: %v", err)
	}
}

func TestOfflineRootOnCrypttabMapping(t *testing.T) {
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, map[string]any{
		"etc/crypttab": "cryptroot UUID=1 none luks\n",
		"etc/fstab":    "/dev/mapper/cryptroot / ext4 defaults 0 1\n",
	})
	enc := mustCollect(t, collecttest.NewEnv(t, dir, false))
	if r := enc.Root; r == nil || !r.Encrypted || r.Source != "fstab" || r.Chain[0] != "/dev/mapper/cryptroot" {
		t.Errorf("root %+v", r)
	}
}

func TestLiveRootOnPlainPartition(t *testing.T) {
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, map[string]any{
		"proc/self/mountinfo":              "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n",
		"sys/dev/block/8:1/uevent":         "DEVNAME=sda1\n",
		"sys/dev/block/254:0/dm/uuid":      "CRYPT-VERITY-x\n",
		"sys/dev/block/254:0/slaves/sda2/": nil,
	})
	enc := mustCollect(t, collecttest.NewEnv(t, dir, true))
	if r := enc.Root; r == nil || r.Encrypted || strings.Join(r.Chain, ",") != "sda1" {
		t.Errorf("root %+v", r)
	}
	// dm-verity protects integrity, not confidentiality.
	c, encrypted := devChain(collecttest.NewEnv(t, dir, true).FS, "254:0", "", budgetOf(defaultTrialLimits))
	if encrypted || strings.Join(c.names, ",") != "254:0,sda2" || c.hops[0].Kind != "verity" {
		t.Errorf("verity chain %+v encrypted=%v", c.hops, encrypted)
	}
}

func TestSlavesCycleIsBounded(t *testing.T) {
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, map[string]any{
		"sys/devices/a/uevent":   "DEVNAME=dm-5\n",
		"sys/devices/a/dm/uuid":  "CRYPT-LUKS2-x\n",
		"sys/devices/a/slaves/x": collecttest.Symlink("../../a"),
		"sys/dev/block/253:5":    collecttest.Symlink("../../devices/a"),
	})
	c, _ := devChain(collecttest.NewEnv(t, dir, true).FS, "253:5", "", budgetOf(defaultTrialLimits))
	if len(c.names) > maxChainDepth+2 {
		t.Errorf("chain of %d through a cycle", len(c.names))
	}
}
