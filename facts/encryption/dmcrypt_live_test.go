//go:build linux

package encryption

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

// TestLiveDMCryptTable opens a real dm-crypt mapping over a loop device and
// reads its cipher through the kernel, as a host scan does. cryptsetup
// attaches the loop device itself and, closing the mapping, detaches it.
func TestLiveDMCryptTable(t *testing.T) {
	testutil.Root(t)
	// libdevmapper makes /dev/mapper/control when it is missing, even on a
	// kernel without device-mapper; the kernel's own misc device tells.
	if _, err := os.Stat("/sys/class/misc/device-mapper"); err != nil {
		t.Skip("no device-mapper on this kernel (/sys/class/misc/device-mapper is missing)")
	}
	if _, err := os.Stat("/dev/mapper/control"); err != nil {
		t.Skip("no /dev/mapper/control")
	}
	cs := testutil.Tool(t, "cryptsetup", "cryptsetup-bin")
	for _, bits := range []int{512, 256} {
		vol, _ := testutil.LUKSFormat(t, "luks2", "aes-xts-plain64", bits)
		name := fmt.Sprintf("gpuhost-test-%d-%d", os.Getpid(), bits)
		key := filepath.Join(filepath.Dir(vol), "key")
		testutil.Run(t, time.Minute, cs, "open", "--type", "luks2", "--key-file", key, vol, name)
		t.Cleanup(func() { _ = exec.Command(cs, "close", name).Run() })

		targets, err := kernelDMTable("/", name)
		if err != nil {
			t.Fatal(err)
		}
		cp := cryptFromTable(targets, "kernel")
		if cp.Cipher != "aes-xts-plain64" || cp.KeyBits != bits || cp.Error != "" {
			t.Errorf("kernel table of %s: %+v, want aes-xts-plain64 with %d bits", name, cp, bits)
		}

		fsys, closer, err := sysroot.Open("/")
		if err != nil {
			t.Fatal(err)
		}
		c, enc := devChain(fsys, "", "/dev/mapper/"+name, budgetOf(defaultTrialLimits))
		closer.Close()
		if !enc || len(c.hops) < 2 || c.hops[0].Kind != "crypt" || c.hops[0].Name != name || c.hops[1].Kind != "loop" {
			t.Fatalf("chain %+v encrypted=%v", c.hops, enc)
		}
		if got := c.hops[0].Crypt; got == nil || got.KeyBits != bits || got.Type != "luks2" || got.Source != "kernel" {
			t.Errorf("crypt hop %+v", got)
		}
	}
}
