package rootfs

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/hashicorp/packer-plugin-sdk/multistep"
)

// TestInitrdOffReachesTheCommand runs a wrapped command through a real
// shell, as the chroot communicator's line is run: the kernel hooks the
// command's packages start must see INITRD=No in their environment.
func TestInitrdOffReachesTheCommand(t *testing.T) {
	identity := func(command string) (string, error) { return command, nil }
	line, err := initrdOff(identity)(`/bin/sh -c "echo INITRD=\$INITRD"`)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", line)
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "INITRD=No" {
		t.Errorf("the command saw %q, want INITRD=No", got)
	}
}

// TestBootKernelsWithoutTheirInitramfs: a kernel installed while the hooks
// were off has no initrd.img yet; the encrypted build's initramfs step
// still finds it, and the boot loader's listing still wants the pair.
func TestBootKernelsWithoutTheirInitramfs(t *testing.T) {
	dir := t.TempDir()
	boot := filepath.Join(dir, "boot")
	if err := os.MkdirAll(boot, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"vmlinuz-6.1.0-50-amd64", "initrd.img-6.1.0-50-amd64", "vmlinuz-6.8.0-31-generic", "vmlinuz-not a release"} {
		if err := os.WriteFile(filepath.Join(boot, f), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, c := range []struct {
		withInitrd bool
		want       []string
	}{{true, []string{"6.1.0-50-amd64"}}, {false, []string{"6.8.0-31-generic", "6.1.0-50-amd64"}}} {
		ks, err := bootKernels(root, c.withInitrd)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, k := range ks {
			got = append(got, k.Release)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("bootKernels(withInitrd=%v) = %v, want %v", c.withInitrd, got, c.want)
		}
	}
}

// TestBootstrapHooksOffForAnEncryptedDisk runs the real mmdebstrap step
// with an mmdebstrap on PATH that writes down the INITRD its package
// scripts would see: off for an encrypted disk, whose initramfs the
// builder makes later, and left alone for a plain one, whose initramfs
// is the bootstrap's.
func TestBootstrapHooksOffForAnEncryptedDisk(t *testing.T) {
	testutil.Root(t)
	bin := t.TempDir()
	fake := "#!/bin/sh\necho \"INITRD=$INITRD\" >\"$GPUHOST_TEST_ENV_OUT\"\n"
	if err := os.WriteFile(filepath.Join(bin, "mmdebstrap"), []byte(fake), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+":"+os.Getenv("PATH"))
	t.Setenv("INITRD", "")
	for _, tc := range []struct {
		name      string
		encrypted bool
		want      string
	}{{"encrypted", true, "INITRD=No"}, {"plain", false, "INITRD="}} {
		out := filepath.Join(t.TempDir(), "env")
		t.Setenv("GPUHOST_TEST_ENV_OUT", out)
		c := keyConfig()
		c.OutputFormat = "disk"
		c.Encryption.LUKS2 = tc.encrypted
		state := testState(filepath.Join(t.TempDir(), "rootfs"))
		state.Put(stateConfig, c)
		if (&stepMmdebstrap{}).Run(context.Background(), state) != multistep.ActionContinue {
			t.Fatalf("%s: %v", tc.name, state.Get("error"))
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatalf("%s: mmdebstrap did not run: %v", tc.name, err)
		}
		if got := strings.TrimSpace(string(b)); got != tc.want {
			t.Errorf("%s disk: mmdebstrap saw %q, want %q", tc.name, got, tc.want)
		}
	}
}
