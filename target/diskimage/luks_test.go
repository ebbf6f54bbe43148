package diskimage

import (
	"errors"
	"testing"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// TestEncryptedRootIsNotJudgedByItsBoot: beside a LUKS volume, an ext4
// filesystem with no OS in it (a /boot) is never taken for the root. The
// root is inside the volume when the volume's partition has a Linux root
// type, when it is the only LUKS partition and no ext4 holds an OS, or when
// --root-partition names it; a LUKS data partition beside an OS root
// changes nothing.
func TestEncryptedRootIsNotJudgedByItsBoot(t *testing.T) {
	vol, uuid := testutil.LUKSFormat(t, "luks2", "aes-xts-plain64", 512)
	boot := ext4Of(t, writeTree(t, map[string]string{"grub/grub.cfg": "set default=0\n"}), "8M")
	weak := ext4Of(t, osTree(t, "weak", nil), "8M")
	size := int64(2048 + 8<<11 + 20<<11 + 2048)
	parts := func(first, typ string) []testPart {
		return []testPart{{start: 2048, sectors: 8 << 11, fs: first}, {start: 2048 + 8<<11, sectors: 20 << 11, gptType: typ, fs: vol}}
	}
	for name, c := range map[string]struct {
		disk string
		opts Options
	}{
		"root type":    {disk: gptDisk(t, size, gptSpec{}, parts(boot, linuxRootX86))},
		"no OS beside": {disk: gptDisk(t, size, gptSpec{}, parts(boot, ""))},
		"chosen":       {disk: gptDisk(t, size, gptSpec{}, parts(weak, "")), opts: Options{RootPartition: 2}},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c.opts.Open(t.Context(), c.disk)
			var e *EncryptedRootError
			if !errors.As(err, &e) || e.Partition.Index != 2 || e.UUID != uuid {
				t.Fatalf("want the encrypted root on partition 2 (%s), got %v", uuid, err)
			}
			o := c.opts
			o.EncryptedRoot = true
			im, err := o.Open(t.Context(), c.disk)
			if err != nil {
				t.Fatal(err)
			}
			defer im.Close()
			if im.Encrypted == nil || im.FS() != nil || im.Root.Index != 2 || im.Offset != im.Root.Start || im.Err() != nil {
				t.Errorf("image %+v, encrypted %+v", im, im.Encrypted)
			}
		})
	}
	t.Run("data volume beside an OS", func(t *testing.T) {
		mustRead(t, Options{}, gptDisk(t, size, gptSpec{}, parts(weak, "")), "weak")
	})
}
