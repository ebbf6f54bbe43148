// Package images holds the Packer templates; this test bakes the runnable
// Debian 12 stand-in end to end with the real Packer and the real plugin.
package images

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/builder/gpu"
	"github.com/gpuhost/gpuhost/containers/seed/seedtest"
	"github.com/gpuhost/gpuhost/containers/trivy"
	"github.com/gpuhost/gpuhost/facts/network"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/facts/tls"
	"github.com/gpuhost/gpuhost/internal/qemu"
	"github.com/gpuhost/gpuhost/internal/testutil/testsign"
	"github.com/gpuhost/gpuhost/reports"
)

// TestE2EDebian12 runs `packer build images/debian-12-gpu.pkr.hcl` as root,
// once, and everything else reads that one bake: mmdebstrap from this
// machine's Debian mirror, the gpuhost-gpu provisioner installing the pinned
// NVIDIA 535 userspace and pre-seeding a small base image by digest from an
// in-process registry, a bootable qcow2 disk out whose root is LUKS2. It
// reads the disk without mounting it (qemu-img to raw; cryptsetup on the
// root partition's header, which the build's one-time key opens; debugfs
// on the /boot partition) and the rootfs tree the encrypted root was made
// from, kept beside it, and checks
// the manifest pins libnvidia-ml1 held at the pin, containerd sets
// SystemdCgroup, the hardening is in place (nftables default-drop input
// enabled, OpenSSL MinProtocol TLSv1.3), the image carries no SSH host key
// and an empty machine-id, the gate with the Debian 12 waivers and the
// demo's vulnerability DB passes (and fails when the DB says openssl has a
// newer fix), and no mount is left behind. Then it boots the disk in QEMU
// (see boot_test.go): under UEFI first, a second time under BIOS.
func TestE2EDebian12(t *testing.T) {
	if os.Getenv("GPUHOST_E2E") != "1" {
		t.Skip("end-to-end image bake: set GPUHOST_E2E=1 (make e2e); needs root and the Debian mirror")
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root: mmdebstrap and chroot")
	}
	// Beside TestE2EUbuntuStandInBake: this test spends most of its time in
	// TCG boots, that one in bakes, and on two cores the pair takes little
	// longer than the longer of them.
	t.Parallel()
	for _, tool := range []string{"mmdebstrap", "qemu-img", "debugfs", "qemu-system-x86_64", "ssh-keyscan"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is missing (make build-deps installs it)", tool)
		}
	}
	packer := mustAbs(t, envOr("GPUHOST_PACKER", "../bin/packer"))
	plugin := mustAbs(t, envOr("GPUHOST_PLUGIN", "../bin/packer-plugin-gpuhost"))
	pluginPath, out := t.TempDir(), t.TempDir()
	cache := envOr("GPUHOST_E2E_APT_CACHE", filepath.Join(os.TempDir(), "gpuhost-e2e-apt-cache"))

	run := func(name string, args ...string) []byte {
		t.Helper()
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), "PACKER_PLUGIN_PATH="+pluginPath, "CHECKPOINT_DISABLE=1", "PACKER_NO_COLOR=1")
		b, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, b)
		}
		return b
	}
	run(packer, "plugins", "install", "--path", plugin, "github.com/gpuhost/gpuhost")
	demoDB, err := trivy.ReadFixture("trivy-db-demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dbDir := writeDB(t, demoDB)
	base := seedBase(t)
	params := paramsWith(t, out, base.registry)
	agentBin := mustAbs(t, envOr("GPUHOST_AGENT", filepath.Join(filepath.Dir(mustAbs(t, envOr("GPUHOST_BIN", "../bin/gpuhost"))), "gpuhost-agent")))
	// The gate publishes the passing image, signed, to a registry of its
	// own (blobs on disk: the disk is large), as make demo and a release
	// pipeline do.
	release := seedtest.NewOnDisk(t, t.TempDir())
	signingKey, verifyKey := testsign.ECDSAKeyFiles(t)
	// The image's module signing key, as a release pipeline keeps it: the
	// bake leaves its certificate as /var/lib/dkms/mok.pub, and the boot
	// test signs its stand-in module with it.
	modKey := newModuleKey(t)
	start := time.Now()
	log := run(packer, "build", "-force", "-var-file=pins-debian-12.pkrvars.hcl",
		"-var", "output_dir="+filepath.Join(out, "image"), "-var", "apt_cache_dir="+cache,
		"-var", "trivy_db="+dbDir, "-var", "params="+params, "-var", "agent_bin="+agentBin,
		"-var", fmt.Sprintf(`ngc_images=[{ref = %q, digest = %q}]`, base.ref, base.digest),
		"-var", fmt.Sprintf(`ngc_allowed_registries=["nvcr.io", %q]`, base.registry),
		"-var", "publish_repository="+release.Host+"/gpuhost/debian-12-gpu", "-var", "signing_key_file="+signingKey,
		"-var", "dkms_signing_key="+modKey.key, "-var", "dkms_signing_certificate="+modKey.cert,
		"debian-12-gpu.pkr.hcl")
	t.Logf("packer build took %s", time.Since(start).Round(time.Second))
	if err := os.WriteFile(filepath.Join(out, "build.log"), log, 0o644); err != nil {
		t.Fatal(err)
	}
	logStepTimings(t, log)

	qcows, _ := filepath.Glob(filepath.Join(out, "image", "*.qcow2"))
	if len(qcows) != 1 || filepath.Base(qcows[0]) != "disk.qcow2" {
		t.Fatalf("want one disk.qcow2 in the output, found %v\n%s", qcows, log)
	}
	// The tree the encrypted root was made from, which the builder keeps
	// beside the disk and the gate reads its files from.
	tree := filepath.Join(out, "image", "rootfs")
	cat := func(path string) []byte {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(tree, path))
		if err != nil {
			t.Fatalf("the image's %s: %v", path, err)
		}
		return b
	}
	luks := bakedLUKSDisk(t, qcows[0], tree)
	checkPublished(t, log, verifyKey)

	var manifest struct {
		Schema   string `json:"schema"`
		Packages []struct {
			Name    string `json:"name"`
			Version string `json:"version"`
			Held    bool   `json:"held"`
		} `json:"packages"`
		ConfigFiles []struct {
			Path string `json:"path"`
		} `json:"config_files"`
	}
	if err := json.Unmarshal(cat("/etc/gpuhost/manifest.json"), &manifest); err != nil {
		t.Fatalf("reading the baked manifest: %v", err)
	}
	if manifest.Schema != "gpuhost.manifest/v1" {
		t.Errorf("manifest schema %q", manifest.Schema)
	}
	found := false
	var openssl string
	for _, p := range manifest.Packages {
		if p.Name == "openssl" {
			openssl = p.Version
		}
		if p.Name == "libnvidia-ml1" {
			found = true
			if p.Version != "535.261.03-1" || !p.Held {
				t.Errorf("libnvidia-ml1 is %s held=%v, want 535.261.03-1 held", p.Version, p.Held)
			}
		}
	}
	if !found {
		t.Error("the manifest lists no libnvidia-ml1")
	}

	var containerd strings.Builder
	for _, f := range manifest.ConfigFiles {
		if strings.HasPrefix(f.Path, "/etc/containerd/") {
			containerd.Write(cat(f.Path))
		}
	}
	if got := string(cat("/etc/modprobe.d/gpuhost-blacklist-nouveau.conf")); !strings.Contains(got, "blacklist nouveau") {
		t.Errorf("nouveau is not blacklisted in the image: %q", got)
	}
	if !strings.Contains(containerd.String(), "SystemdCgroup = true") {
		t.Errorf("no containerd config in the image sets SystemdCgroup = true:\n%s", containerd.String())
	}

	checkHardening(t, cat, tree, manifest.ConfigFiles)

	// The real NVIDIA userspace is in the image but no driver is loaded:
	// gpuhost run inside it must report NVML's own error, not crash or pass.
	rootfs := filepath.Join(out, "rootfs")
	run("cp", "-a", tree, rootfs)
	if wants, _ := filepath.Glob(filepath.Join(rootfs, "etc/systemd/system/*.wants/nftables.service")); len(wants) == 0 {
		t.Error("nftables.service is not enabled in the image (no *.wants/nftables.service link)")
	}
	// The builder bootstraps with dpkg's unsafe-io; the image must not keep it.
	confs, _ := filepath.Glob(filepath.Join(rootfs, "etc/dpkg/dpkg.cfg.d/*"))
	for _, c := range confs {
		if b, err := os.ReadFile(c); err == nil && strings.Contains(string(b), "unsafe-io") {
			t.Errorf("%s in the image sets dpkg unsafe-io", strings.TrimPrefix(c, rootfs))
		}
	}
	checkFirstBootHygiene(t, rootfs)
	gpuhost := mustAbs(t, envOr("GPUHOST_BIN", "../bin/gpuhost"))
	offline := gateImage(t, gpuhost, qcows[0], tree, dbDir, params)
	// The same scan with a DB in which openssl's fix is one revision newer
	// than the image's: GH-SC-001 judges the baked packages, so it fails.
	if openssl == "" {
		t.Error("the manifest lists no openssl")
	} else {
		poisoned := demoDB
		published := time.Now().AddDate(0, -2, 0)
		poisoned.Advisories = append(slices.Clone(demoDB.Advisories), trivy.FixtureAdvisory{Bucket: "debian 12", Package: "openssl", ID: "CVE-2099-0001", Fixed: openssl + "+1"})
		poisoned.Vulnerabilities = append(slices.Clone(demoDB.Vulnerabilities), trivy.FixtureVulnerability{ID: "CVE-2099-0001", Title: "e2e: a fix newer than the image", Severity: map[string]string{"nvd": "CRITICAL"}, Published: &published})
		status, code, _ := scanImage(t, gpuhost, qcows[0], tree, writeDB(t, poisoned), params)
		if code != 1 || status["GH-SC-001"] != "fail" {
			t.Errorf("with openssl's fix newer than the image's %s: exit %d, GH-SC-001 %q; want exit 1 and a fail", openssl, code, status["GH-SC-001"])
		}
	}
	bin, err := os.ReadFile(gpuhost)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "gpuhost"), bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// A bare chroot has no /proc or /sys, so some host collectors fail and
	// facts exits 2 while still printing the document; what this test reads
	// is the gpu collector's view of NVML inside the image.
	cmd := exec.Command("chroot", rootfs, "/gpuhost", "facts", "host")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	factsOut, err := cmd.Output()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee) && ee.ExitCode() == 2:
		t.Logf("gpuhost facts host in the image exited 2 (collectors that need /proc or /sys): %s", lastLine(stderr.String()))
	case err != nil:
		t.Fatalf("gpuhost facts host in the image: %v\n%s", err, stderr.String())
	}
	var got struct {
		GPU struct {
			Available bool   `json:"available"`
			Reason    string `json:"reason"`
		} `json:"gpu"`
	}
	if err := json.Unmarshal(factsOut, &got); err != nil {
		t.Fatalf("facts from inside the image: %v", err)
	}
	if got.GPU.Available || !strings.Contains(got.GPU.Reason, "ERROR_") || strings.Contains(got.GPU.Reason, "LIBRARY_NOT_FOUND") {
		t.Errorf("inside the image, with libnvidia-ml1 but no driver: gpu = %+v; want unavailable with NVML's driver error", got.GPU)
	}
	t.Logf("NVML inside the image: %s", got.GPU.Reason)

	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		if strings.Contains(line, out) {
			t.Errorf("mount left behind: %s", line)
		}
	}

	// The ext4 inside the LUKS2 volume, which fstab and GRUB name.
	m := regexp.MustCompile(`root=UUID=([0-9a-f-]{36}) `).FindSubmatch(cat("boot/grub/grub.cfg"))
	if m == nil {
		t.Fatalf("grub.cfg names no root=UUID=:\n%s", cat("boot/grub/grub.cfg"))
	}
	rootUUID := string(m[1])
	kernels, _ := filepath.Glob(filepath.Join(tree, "boot", "vmlinuz-*"))
	if got := cat("/var/lib/dkms/mok.pub"); !strings.Contains(string(got), "BEGIN CERTIFICATE") {
		t.Errorf("the image's /var/lib/dkms/mok.pub is not the module signing certificate:\n%s", got)
	}
	if _, err := os.Lstat(filepath.Join(tree, "var/lib/dkms/mok.key")); err == nil {
		t.Error("the image keeps the module signing key /var/lib/dkms/mok.key")
	}
	bootTests(t, gpuhost, qcows[0], filepath.Join(out, "boot"), offline, base, rootUUID, kernels, luks, modKey)
}

// bootTests boots the baked disk three times. Under UEFI with Secure Boot
// enforced (Debian's OVMF with Microsoft's keys, under SMM) and a software
// TPM, twice, the same host, whose UEFI variables hold the image's module
// signing certificate as its MOK: the first boot goes through shim, GRUB
// and the kernel, all signed, loads the stand-in module signed with that
// key and has the unsigned one refused, unlocks the LUKS2 root with the
// image's one-time key, seals a new key to the TPM's PCR 7 and wipes the
// provisioning key slot; the second, through `gpuhost boot`, unlocks from
// the TPM with no passphrase and no key left. Beside that host, at the
// same time, a second host (a fresh overlay and TPM) boots under BIOS, not
// Secure Boot: SeaBIOS measures other PCRs than OVMF, so the first host's
// TPM key could not unseal there, and this host enrols its own; the
// unsigned stand-in loads, and the live scan fails the host for it. The
// two hosts' volume keys and machine-ids must differ. Each boot's selftest reports what
// runs, the live scan and drift, each compared check by check with the
// offline gate. Then the image's kernel is booted with no root, and must
// be seen to panic.
func bootTests(t *testing.T, gpuhost, disk, dir string, offline reports.Report, base seededBase, rootUUID string, kernels []string, luks luksImage, modKey *moduleKey) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The consoles and the selftests' reports outlive the test where
	// GPUHOST_E2E_ARTIFACTS names a directory, for whoever reads a failure.
	if keep := os.Getenv("GPUHOST_E2E_ARTIFACTS"); keep != "" {
		t.Cleanup(func() { keepArtifacts(t, dir, filepath.Join(keep, "boot")) })
	}
	agent := newAgentTLS(t)
	if len(kernels) != 1 {
		t.Fatalf("want the image's one kernel, found %v", kernels)
	}
	modules := standInModules(t, strings.TrimPrefix(filepath.Base(kernels[0]), "vmlinuz-"), modKey)
	overlay := filepath.Join(dir, "host.qcow2")
	tpm := filepath.Join(dir, "host.tpm")
	// With the root encrypted, nothing fails on the booted host.
	var wantFail []string
	// The two hosts boot side by side: under TCG a guest's first boot is
	// mostly one vCPU re-encrypting its root, so two use the machine's
	// cores where one would leave a core idle.
	var first, other *bootRun
	t.Run("hosts", func(t *testing.T) {
		t.Run("uefi", func(t *testing.T) {
			t.Parallel()
			t.Run("first-boot", func(t *testing.T) {
				first = bootSelftest(t, "uefi-secureboot", disk, overlay, tpm, qemu.UEFISecureBoot, agent, true, bootExtras{inputs: modules, moks: [][]byte{modKey.der}})
				assertBoot(t, first, base.ref, base.digest, rootUUID)
				assertEnrolled(t, first, luks)
				assertSecureBoot(t, first)
				liveVerdict(t, first, wantFail)
				if !strings.Contains(first.metrics, "gpuhost_check_status{") {
					t.Errorf("/metrics through the forwarded port has no gpuhost_check_status:\n%.2000s", first.metrics)
				}
				if first.noToken != http.StatusUnauthorized {
					t.Errorf("/metrics without the token: status %d, want 401", first.noToken)
				}
				// sshd offers what HostKeyAlgorithms lets through of the keys
				// first boot made: every one must be this host's own.
				made := keyLines(string(first.reports["ssh-host-keys.pub"]))
				if len(first.hostKeys) == 0 {
					t.Error("sshd offered no host key through the forwarded port")
				}
				for _, k := range first.hostKeys {
					if !slices.Contains(made, k) {
						t.Errorf("sshd offers %.60s..., which is not among the keys first boot made (%d)", k, len(made))
					}
				}
				agreement(t, offline, first.scan)
				sbAgreement(t, offline, first.scan, first.name)
			})
			t.Run("second-boot-tpm-unlock", func(t *testing.T) {
				if first == nil || first.reports == nil {
					t.Skip("the first boot did not report")
				}
				// This boot goes through `gpuhost boot --selftest`, as a user runs it.
				second := bootSelftestCLI(t, gpuhost, "uefi-tpm", disk, overlay, tpm, qemu.UEFISecureBoot, agent, bootWaivers(t, "waivers-debian-12.yaml", "debian-12-gpu"))
				assertBoot(t, second, base.ref, base.digest, rootUUID)
				// Slot 0 and the key file are gone: the TPM alone opened the root.
				assertEnrolled(t, second, luks)
				if strings.Contains(string(second.reports["luks-enroll.log"]), "sealing a new key") {
					t.Errorf("the second boot enrolled again:\n%s", second.reports["luks-enroll.log"])
				}
				liveVerdict(t, second, wantFail)
				// The same host: what first boot made for it stays.
				for _, f := range []string{"machine-id", "ssh-host-keys.pub", "luks-dump.txt"} {
					if a, b := strings.TrimSpace(string(first.reports[f])), strings.TrimSpace(string(second.reports[f])); a != b {
						t.Errorf("%s changed between the first and the second boot:\n%s\n%s", f, a, b)
					}
				}
				agreement(t, offline, second.scan)
			})
		})
		t.Run("bios-other-host", func(t *testing.T) {
			t.Parallel()
			other = bootSelftest(t, "bios", disk, filepath.Join(dir, "other.qcow2"), filepath.Join(dir, "other.tpm"), qemu.BIOS, agent, false, bootExtras{inputs: forged(modules)})
			assertBoot(t, other, base.ref, base.digest, rootUUID)
			assertEnrolled(t, other, luks)
			assertNotSecureBoot(t, other)
			// Not Secure Boot: the firmware, lockdown and the unsigned module
			// the kernel let in fail, and nothing else.
			liveVerdict(t, other, []string{"GH-SB-004", "GH-SB-005", "GH-SB-006"})
			agreement(t, offline, other.scan)
			sbAgreement(t, offline, other.scan, other.name)
		})
	})
	t.Run("hosts-are-their-own", func(t *testing.T) {
		if first == nil || first.reports == nil || other == nil || other.reports == nil {
			t.Skip("a host did not report")
		}
		// Each host re-encrypted its root with a volume key of its own.
		if luksDigests(string(first.reports["luks-dump.txt"])) == luksDigests(string(other.reports["luks-dump.txt"])) {
			t.Errorf("two hosts booted from one image have the same volume key digest:\n%s", luksDigests(string(other.reports["luks-dump.txt"])))
		}
		if string(first.reports["machine-id"]) == string(other.reports["machine-id"]) {
			t.Error("two hosts booted from the image share a machine-id")
		}
	})
	t.Run("kernel-panic", func(t *testing.T) {
		bootPanics(t, kernels[0])
	})
}

// assertEnrolled checks, from what the selftest read inside the guest
// (cryptsetup luksDump of the root's header, the crypt units, a test of
// the empty passphrase), that the root is the baked LUKS2 volume, opened,
// with a systemd-tpm2 token on a key slot of its own and the one-time slot
// 0 wiped, so that the empty passphrase opens nothing. The console never
// asked for a passphrase: nothing answers one in the test, so a boot that
// had asked would not have reported at all.
func assertEnrolled(t *testing.T, run *bootRun, luks luksImage) {
	t.Helper()
	luksUUID := luks.uuid
	r := run.reports
	dump := string(r["luks-dump.txt"])
	for _, want := range []string{"UUID:          \t" + luksUUID, "cipher: aes-xts-plain64", "systemd-tpm2", luksImageKeyToken} {
		if !strings.Contains(dump, want) {
			t.Errorf("%s: the root's header, read in the guest, lacks %q:\n%s", run.name, want, dump)
		}
	}
	// One key slot is left, the one the TPM2 token unseals: the image's
	// one-time slot (renumbered by the re-encryption) is gone.
	slots := luksSlots(dump)
	if len(slots) != 1 || !regexp.MustCompile(`(?m)^\tKeyslot:\s+`+regexp.QuoteMeta(slots[0])+`$`).MatchString(dump) {
		t.Errorf("%s: the root's key slots are %v, want one, the TPM2 token's:\n%s", run.name, slots, dump)
	}
	// First boot re-encrypted the root: its volume key is no longer the
	// image's, which every host booted from it shared.
	if d := luksDigests(dump); d == "" || d == luks.digests {
		t.Errorf("%s: the root's volume key digest is the image's:\n%s", run.name, d)
	}
	if units := string(r["crypt-units.txt"]); !strings.Contains(units, "luks-"+luksUUID) || !strings.Contains(units, "active") {
		t.Errorf("%s: systemd-cryptsetup@luks-%s is not active:\n%s", run.name, luksUUID, units)
	}
	if empty := string(r["luks-empty-passphrase.txt"]); !strings.Contains(empty, "rc=2") {
		t.Errorf("%s: the empty passphrase still opens the root (or was not tried):\n%s", run.name, empty)
	}
	// The enrolment runs on a host's first boot and never again.
	units := parseUnits(strings.TrimSpace(string(r["units.txt"])))
	if run.name != "uefi-tpm" && (units["gpuhost-luks-enroll.service"] != "active" || !strings.Contains(string(r["luks-enroll.log"]), "sealing a new key")) {
		t.Errorf("%s: gpuhost-luks-enroll.service is %q:\n%s", run.name, units["gpuhost-luks-enroll.service"], r["luks-enroll.log"])
	}
}

// keepArtifacts copies the text a boot left in dir (consoles, reports)
// into keep, leaving the disks out.
func keepArtifacts(t *testing.T, dir, keep string) {
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch filepath.Ext(p) {
		case ".qcow2", ".raw", ".vars", ".key":
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(filepath.Join(keep, rel)), 0o755); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(keep, rel), b, 0o644)
	})
	if err != nil {
		t.Logf("keeping the boot artifacts: %v", err)
	}
}

// checkFirstBootHygiene: the image leaves each host's identity to its first
// boot.
func checkFirstBootHygiene(t *testing.T, rootfs string) {
	t.Helper()
	if b, err := os.ReadFile(filepath.Join(rootfs, "etc/machine-id")); err != nil || len(b) != 0 {
		t.Errorf("/etc/machine-id in the image is %q (%v); want it empty", b, err)
	}
	if keys, _ := filepath.Glob(filepath.Join(rootfs, "etc/ssh/ssh_host_*")); len(keys) != 0 {
		t.Errorf("the image carries SSH host keys: %v", keys)
	}
	for _, f := range []string{"boot/grub/grub.cfg", "boot/grub/i386-pc/core.img", "boot/grub/x86_64-efi/core.efi", "etc/repart.d/50-gpuhost-root.conf", "etc/systemd/system/local-fs.target.wants/gpuhost-growroot.service", "etc/systemd/system/ssh.service.wants/gpuhost-ssh-hostkeys.service"} {
		if _, err := os.Lstat(filepath.Join(rootfs, f)); err != nil {
			t.Errorf("the disk's root lacks /%s: %v", f, err)
		}
	}
	if _, err := os.Lstat(filepath.Join(rootfs, "etc/systemd/system/multi-user.target.wants/gpuhost-selftest.service")); err == nil {
		t.Error("gpuhost-selftest.service is enabled in the image: every host would power itself off")
	}
}

// logStepTimings logs the builder's step table from Packer's output.
func logStepTimings(t *testing.T, log []byte) {
	t.Helper()
	var b strings.Builder
	in := false
	for _, l := range strings.Split(string(log), "\n") {
		_, rest, ok := strings.Cut(l, ": ")
		switch {
		case ok && strings.HasPrefix(rest, "Step timings:"):
			in = true
		case in && ok:
			b.WriteString(rest + "\n")
			if strings.HasPrefix(rest, "total") {
				in = false
			}
		}
	}
	t.Logf("bake step timings:\n%s", b.String())
}

// checkHardening reads the files the provisioner's hardening wrote out of
// the image: the firewall, OpenSSL's system default through the file
// openssl.cnf includes, the sshd and journald drop-ins and the host name;
// and the baked manifest digests each of them, so drift from them shows.
func checkHardening(t *testing.T, cat func(string) []byte, tree string, configFiles []struct {
	Path string `json:"path"`
}) {
	t.Helper()
	policy, ports, hasInput, err := network.ParseNftables(cat("/etc/nftables.conf"))
	if err != nil {
		t.Errorf("/etc/nftables.conf in the image: %v", err)
	}
	allowed := allowedPorts(t)
	if !hasInput || policy != "drop" || !slices.Contains(ports, 22) || !slices.Contains(ports, 9108) {
		t.Errorf("/etc/nftables.conf in the image: input chain %v, policy %q, ports %v; want policy drop with 22 and 9108 open", hasInput, policy, ports)
	}
	for _, p := range ports {
		if !slices.Contains(allowed, p) {
			t.Errorf("/etc/nftables.conf in the image accepts port %d, not in allowed_ports %v", p, allowed)
		}
	}
	fsys, closer, err := sysroot.Open(tree)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	ssl, err := tls.LoadOpenSSL(fsys, "/etc/ssl/openssl.cnf")
	if err != nil {
		t.Fatalf("/etc/ssl/openssl.cnf in the image: %v", err)
	}
	if sd := ssl.SystemDefault(); sd.MinProtocol != "TLSv1.3" || sd.MinProtocolAt.File != gpu.OpenSSLInclude {
		t.Errorf("/etc/ssl/openssl.cnf in the image: system_default %+v; want MinProtocol TLSv1.3 from %s", sd, gpu.OpenSSLInclude)
	}
	if got := string(cat(gpu.SSHDropIn)); !strings.Contains(got, "PasswordAuthentication no") || !strings.Contains(got, "Match Group gpuhost-admin") {
		t.Errorf("%s in the image:\n%s", gpu.SSHDropIn, got)
	}
	if got := string(cat(gpu.JournaldDropIn)); !strings.Contains(got, "Storage=persistent") {
		t.Errorf("%s in the image:\n%s", gpu.JournaldDropIn, got)
	}
	if got := strings.TrimSpace(string(cat("/etc/hostname"))); got != "debian-12-gpu" {
		t.Errorf("/etc/hostname in the image is %q, want debian-12-gpu (the waivers' target)", got)
	}
	var digested []string
	for _, f := range configFiles {
		digested = append(digested, f.Path)
	}
	for _, f := range []string{gpu.OpenSSLInclude, gpu.SSHDropIn, gpu.NftablesConf, gpu.AuditRulesFile, gpu.SudoersDropIn, gpu.JournaldDropIn, "/etc/pam.d/sshd"} {
		if !slices.Contains(digested, f) {
			t.Errorf("the baked manifest does not digest %s", f)
		}
	}
}

// gateImage scans the baked image as the gate does, with the Debian 12
// params and waivers and the demo's vulnerability DB: it must exit 0, with
// every check passed, skipped or waived, exactly the expected waivers used,
// and no critical check left unevaluated.
func gateImage(t *testing.T, gpuhost, qcow, tree, dbDir, params string) reports.Report {
	t.Helper()
	status, code, report := scanImage(t, gpuhost, qcow, tree, dbDir, params)
	if code != 0 {
		t.Errorf("gpuhost scan image with the Debian 12 waivers exited %d; want 0", code)
	}
	var waived []string
	for id, st := range status {
		if st == "waived" {
			waived = append(waived, id)
		}
	}
	slices.Sort(waived)
	// GH-ENC-001 needs no waiver: the root is LUKS2.
	if want := []string{"GH-PIN-005", "GH-RT-001", "GH-RT-003"}; !slices.Equal(waived, want) {
		t.Errorf("waived %v; want %v", waived, want)
	}
	// What the template hardens must pass on its own, not be skipped; so
	// must the CVE check, which the demo's DB lets run.
	for _, id := range []string{"GH-ENC-001", "GH-ENC-003", "GH-NET-002", "GH-NET-003", "GH-TLS-001", "GH-GPU-015", "GH-PIN-001", "GH-PIN-002", "GH-SC-001", "GH-SSH-010", "GH-SSH-001", "GH-CGR-001",
		// What the provisioner's hardening block is for.
		"GH-SSH-002", "GH-SSH-004", "GH-SSH-005", "GH-SSH-006", "GH-SSH-008", "GH-SSH-009", "GH-AUD-001", "GH-AUD-002", "GH-AUD-003", "GH-AUD-004", "GH-AUD-005",
		"GH-IAM-002", "GH-IAM-003", "GH-IAM-004", "GH-IAM-005", "GH-IAM-006", "GH-PIN-004"} {
		if status[id] != "pass" {
			t.Errorf("%s is %q in the baked image; want pass", id, status[id])
		}
	}
	return report
}

// scanImage runs `gpuhost scan image` as the gate does (the encrypted
// root's files from the tree it was made from, the Debian 12 params and waivers, the DB in dbDir, failing on a critical check that
// did not run) and returns each check's status and the exit code. A check
// that is neither passed, skipped nor waived is reported, the CIS
// baseline's packages and services aside (cisBaseline).
func scanImage(t *testing.T, gpuhost, qcow, tree, dbDir, params string) (map[string]string, int, reports.Report) {
	t.Helper()
	cmd := exec.Command(gpuhost, "scan", "image", qcow, "--rootfs", tree, "--params", params,
		"--waivers", "waivers-debian-12.yaml", "--trivy-db", dbDir, "--fail-on-skip", "critical", "--format", "json")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatalf("gpuhost scan image: %v", err)
	}
	var report reports.Report
	if err := json.Unmarshal(out, &report); err != nil {
		t.Fatalf("the scan's JSON report (exit %d): %v\n%s", code, err, stderr.String())
	}
	status := map[string]string{}
	for _, r := range report.Results {
		status[r.ID] = r.Status
		if code == 0 && r.Status != "pass" && r.Status != "skip" && r.Status != "waived" && !cisBaseline(r) {
			t.Errorf("%s is %s: %v", r.ID, r.Status, r.Messages)
		}
	}
	return status, code, report
}

// writeDB writes fx as a trivy DB in a temporary directory.
func writeDB(t *testing.T, fx trivy.Fixture) string {
	t.Helper()
	dir := t.TempDir()
	if err := trivy.WriteDB(dir, fx); err != nil {
		t.Fatal(err)
	}
	return dir
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("%v (make packer plugin builds it)", err)
	}
	return abs
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
