package images

// The boot half of TestE2EUbuntuStandInBake: jammy's disk booted once in
// QEMU through `gpuhost boot`, scanned live from inside by
// gpuhost-selftest.service, and held against the gate's verdict of the
// same disk.

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/internal/qemu"
	"github.com/gpuhost/gpuhost/internal/testutil/ubunturepo"
	"github.com/gpuhost/gpuhost/manifest"
	"github.com/gpuhost/gpuhost/manifest/treedigest"
	"github.com/gpuhost/gpuhost/reports"
)

// ubuntuBootWantFail are the checks the booted Ubuntu host fails at
// --fail-on high: none. Its ESP has no shim (the template leaves
// secure_boot off) and its params do not require Secure Boot, so the
// GH-SB checks skip, where the Debian image's BIOS host, whose ESP has
// shim, fails them.
var ubuntuBootWantFail []string

// ubuntuBoot boots the disk of the bake in out once under BIOS, with a
// software TPM, through `gpuhost boot --selftest`, and checks what the
// host is: Ubuntu's os-release (systemd's welcome on the console and the
// tree's), the Debian kernel that linux-image-generic installs, the LUKS2
// root unlocked by the one-time key and enrolled in the TPM, multi-user
// reached with the agent, sshd, containerd and nftables running, and the
// live scan agreeing with offline, the gate's report of the same disk.
//
// BIOS, not UEFI: the template's ESP holds GRUB's unsigned image (no
// secure_boot), so UEFI would boot the same GRUB and kernel through
// firmware that takes longer to start under TCG; the Debian test covers
// UEFI's ESP for the same builder.
func ubuntuBoot(t *testing.T, tp ubuntuTemplate, out string, offline reports.Report, archive *ubunturepo.Archive) {
	disk, tree := filepath.Join(out, "disk.qcow2"), filepath.Join(out, "rootfs")
	host := "ubuntu-" + strings.ReplaceAll(tp.version, ".", "") + "-gpu"
	luks := bakedLUKSDisk(t, disk, tree)
	kernel := ubuntuKernel(t, tree, archive)

	dir := filepath.Join(t.TempDir(), "boot")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if keep := os.Getenv("GPUHOST_E2E_ARTIFACTS"); keep != "" {
		t.Cleanup(func() { keepArtifacts(t, dir, filepath.Join(keep, "ubuntu-boot")) })
	}
	gpuhost := mustAbs(t, envOr("GPUHOST_BIN", "../bin/gpuhost"))
	name := "ubuntu-bios"
	run := bootSelftestCLI(t, gpuhost, name, disk, filepath.Join(dir, "host.qcow2"), filepath.Join(dir, "host.tpm"), qemu.BIOS, newAgentTLSFor(t, host),
		bootWaivers(t, "waivers-ubuntu-"+tp.version+".yaml", host))
	t.Logf("%s: power on to the live verdict (gpuhost boot, power on to power off): %s", name, run.verdict.Round(1e9))

	raw, err := os.ReadFile(filepath.Join(dir, name, "console.txt"))
	if err != nil {
		t.Fatal(err)
	}
	// systemd and GRUB colour and place what they print.
	console := regexp.MustCompile(`\x1b\[[0-9;?]*[A-Za-z]`).ReplaceAllString(string(raw), "")
	osRelease := ubunturepo.OSRelease(tp.suite)
	pretty := regexp.MustCompile(`PRETTY_NAME="([^"]+)"`).FindStringSubmatch(osRelease)[1]
	for _, want := range []string{"Welcome to " + pretty + "!", "Linux version " + kernel + " (debian-kernel@lists.debian.org)", "Booting `Ubuntu GNU/Linux, with Linux " + kernel + "'"} {
		if !strings.Contains(console, want) {
			t.Errorf("%s: the console lacks %q", name, want)
		}
	}
	if cmdline := string(run.reports["cmdline"]); !strings.Contains(cmdline, "BOOT_IMAGE=/vmlinuz-"+kernel+" ") {
		t.Errorf("%s: /proc/cmdline does not boot /vmlinuz-%s: %s", name, kernel, cmdline)
	}
	if run.scan.Target.Hostname != host {
		t.Errorf("%s: the live scan's host is %q, want %s", name, run.scan.Target.Hostname, host)
	}
	units := parseUnits(strings.TrimSpace(string(run.reports["units.txt"])))
	for _, u := range []string{"multi-user.target", "gpuhost-agentd.service", "ssh.service", "containerd.service", "nftables.service", "systemd-networkd.service"} {
		if units[u] != "active" {
			t.Errorf("%s: %s is %q", name, u, units[u])
		}
	}
	// Without a GPU, nvidia-persistenced has no driver to keep loaded,
	// and nvidia-ctk no device to write a CDI spec for.
	for _, l := range strings.Split(strings.TrimSpace(string(run.reports["failed-units.txt"])), "\n") {
		if f := strings.Fields(l); len(f) > 0 && f[0] != "nvidia-persistenced.service" && f[0] != "gpuhost-cdi.service" {
			t.Errorf("%s: a unit failed: %s", name, l)
		}
	}
	if cfg := string(run.reports["containerd-config.toml"]); !strings.Contains(cfg, `default_runtime_name = "nvidia"`) {
		t.Errorf("%s: containerd's config dump does not make nvidia the default runtime:\n%s", name, cfg)
	}
	assertEnrolled(t, run, luks)
	liveVerdict(t, run, ubuntuBootWantFail)
	agreement(t, offline, run.scan)
}

// ubuntuKernel checks that the image's one kernel is the one Ubuntu's
// meta package linux-image-generic installs, Debian's
// linux-image-RELEASE from the stand-in archive, and returns its release.
func ubuntuKernel(t *testing.T, tree string, archive *ubunturepo.Archive) string {
	t.Helper()
	status := dpkgStatus(t, filepath.Join(tree, "var/lib/dpkg/status"))
	if p, ok := status["linux-image-generic"]; !ok {
		t.Error("linux-image-generic is not installed in the image")
	} else {
		t.Logf("linux-image-generic %s depends on linux-image-%s %s", p.version, archive.Kernel, status["linux-image-"+archive.Kernel].version)
	}
	list, err := os.ReadFile(filepath.Join(tree, "var/lib/dpkg/info/linux-image-"+archive.Kernel+".list"))
	if err != nil || !strings.Contains(string(list), "/boot/vmlinuz-"+archive.Kernel+"\n") {
		t.Errorf("/boot/vmlinuz-%s is not linux-image-%s's (%v)", archive.Kernel, archive.Kernel, err)
	}
	kernels, _ := filepath.Glob(filepath.Join(tree, "boot", "vmlinuz-*"))
	if len(kernels) != 1 || filepath.Base(kernels[0]) != "vmlinuz-"+archive.Kernel {
		t.Errorf("the image's kernels are %v, want vmlinuz-%s alone", kernels, archive.Kernel)
	}
	return archive.Kernel
}

// sameTree holds two disk bakes of one lock and one disk_id_seed to the
// same tree digest, the build's own excludes aside, and to the same
// manifest: fstab, crypttab, GRUB's configuration and dracut's initramfs
// (made reproducible) included.
func sameTree(t *testing.T, a, b string) {
	t.Helper()
	opts := treedigest.Options{Exclude: treedigest.BuildExcludes}
	da, errA := treedigest.Digest(a, opts)
	db, errB := treedigest.Digest(b, opts)
	if errA != nil || errB != nil || da != db {
		t.Errorf("the first bake's tree digest is %s (%v), the locked bake's %s (%v); the entries that differ:\n%s", da, errA, db, errB, treeDiff(t, a, b))
	}
	ma, errA := os.ReadFile(filepath.Join(a, manifest.Path))
	mb, errB := os.ReadFile(filepath.Join(b, manifest.Path))
	if errA != nil || errB != nil || !bytes.Equal(ma, mb) {
		t.Errorf("the manifests differ (%v, %v):\n%s\n%s", errA, errB, ma, mb)
	}
	if !t.Failed() {
		t.Logf("the first bake and the locked bake: tree digest %s, and the same manifest", da)
	}
}
