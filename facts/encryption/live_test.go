package encryption

import (
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

// The live host's root is on LVM on LUKS2 on vda3, its swap on a dm-crypt
// device, zram and an encrypted file.
func TestLiveHostEncryption(t *testing.T) {
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, collecttest.LiveHost())
	fakeDMTables(t, map[string]string{
		"dm_crypt-0": "0 2097152 crypt aes-xts-plain64 :64:logon:cryptsetup:0123-d0 0 252:3 32768 1 allow_discards\n",
		"cryptswap":  "0 1998848 crypt aes-xts-plain64 " + strings.Repeat("0", 64) + " 0 252:4 0\n",
	})
	env := collecttest.NewEnv(t, dir, true)
	enc := mustCollect(t, env)
	root := enc.Root
	if root == nil || !root.Encrypted || strings.Join(root.Chain, ",") != "dm-1,dm-0,vda3" || root.Device != "/dev/mapper/vg-root" {
		t.Errorf("root %+v, want encrypted through dm-1,dm-0,vda3", root)
	}
	wantSwap := []facts.Swap{
		{Device: "/dev/dm-2", Encrypted: true, Kind: "partition"},
		{Device: "/dev/zram0", Encrypted: false, Kind: "zram"},
		{Device: "/swap.img", Encrypted: true, Kind: "file"},
	}
	if len(enc.Swap) != len(wantSwap) {
		t.Fatalf("swap %+v", enc.Swap)
	}
	for i, s := range wantSwap {
		got := enc.Swap[i]
		if got.Device != s.Device || got.Encrypted != s.Encrypted || got.Kind != s.Kind {
			t.Errorf("swap[%d] = %+v, want %+v", i, enc.Swap[i], s)
		}
	}
	golden(t, "live_host.json", enc)
}
