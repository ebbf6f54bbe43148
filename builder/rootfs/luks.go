package rootfs

// How the rootfs builder encrypts a disk's root (encryption { luks2 = true })
//
// Still with no loop device, no device-mapper and no mount:
//
//   - cryptsetup luksFormat writes a LUKS2 header into a sparse file the size
//     of the root partition (cryptsetup formats a regular file without a
//     loop device), with a volume key the builder made (--volume-key-file)
//     and the build's one-time provisioning key in key slot 0;
//   - mkfs.ext4 -d writes the root file system into a plain sparse file the
//     size of the LUKS data segment;
//   - the builder encrypts that file itself, AES-256-XTS with dm-crypt's
//     plain64 IV (the number of the sector's first 512-byte unit counted
//     from the data segment's start, little-endian, whatever the sector
//     size), which is what the kernel's dm-crypt reads for aes-xts-plain64
//     with the header's --sector-size, and writes it at the data segment's
//     offset in the partition, behind the header.
//
// 4096-byte sectors, not 512, for a root of 1 GiB or more: dm-crypt's cost
// is mostly per sector, and the first boot re-encrypts the image's part of
// the root through it, so eight times fewer sectors is that much less work
// for every host (and for a guest under emulation, minutes). The file
// system's blocks must then be 4096 bytes too, which mkfs.ext4 picks for
// such a size anyway. A smaller root keeps 512-byte sectors: mkfs.ext4
// would give it 1024-byte blocks, and forced to 4096 it leaves reserved
// group descriptor blocks as holes it expects to read back as zeros, which
// an encrypted hole never does.
//
// Only the extents mkfs.ext4 wrote are encrypted (SEEK_DATA/SEEK_HOLE): the
// rest of the partition stays a hole, which reads through dm-crypt as
// random bytes, exactly as the never-written blocks of a volume that
// luksFormat made on a real disk do. mkfs.ext4 runs with lazy_itable_init
// and lazy_journal_init, the two places where it would otherwise rely on
// zeroed blocks: the kernel initialises the inode tables itself, and a
// journal is read back only behind a valid journal superblock. The disk stays
// sparse, so qcow2 keeps it small.
//
// The provisioning secret is the empty passphrase, in key slot 0, and it is
// one-time: first boot seals a new key to the TPM2 and wipes slot 0. Not a
// random key per build, because Debian 12's systemd-cryptsetup (252) cannot
// take one at first boot and the TPM2 at every later boot from one crypttab
// line: with tpm2-device= set it treats a key file as a TPM2-sealed blob,
// and once no token is found it drops the key file and goes on to
// try-empty-password and then a prompt. A random key would need a second
// initramfs made at first boot (minutes under emulation) or a crypttab the
// booted host rewrites. Before first boot the two are worth the same:
// whoever holds the image could read a random key off its unencrypted
// /boot as well.
//
// The kernel and the initramfs cannot be inside the volume: GRUB 2.06 cannot
// open an argon2id key slot. A disk with an encrypted root therefore has a
// fourth partition, an unencrypted ext4 /boot, made with mkfs.ext4 -d from the
// rootfs's /boot.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
)

// stateLUKS holds the *luksRoot of an encrypted disk build.
const stateLUKS = "luks_root"

// The LUKS2 format of the root: what issue 16 and GH-ENC-003 ask for.
const (
	luksCipher  = "aes-xts-plain64"
	luksKeyBits = 512
	// bootSectors is the size of the /boot partition of an encrypted disk:
	// the kernel and dracut's initramfs (about 50 MiB each, twice over
	// while a kernel update installs the next) and GRUB's modules.
	bootSectors = (512 << 20) / sectorSize
)

// What first boot reads and runs.
const (
	// luksEnrollScript is what first boot runs to replace the key.
	luksEnrollScript = "usr/local/lib/gpuhost/gpuhost-luks-enroll"
	// luksStateFile is the first boot's to-do: its presence starts the
	// enrolment, and it names the volume, the key slot and the PCRs.
	luksStateFile = "etc/gpuhost/luks-enroll.conf"
	// dracutConf is the dracut configuration every initramfs of the image
	// is made with, the ones a kernel update makes included.
	dracutConf = "etc/dracut.conf.d/50-gpuhost-luks.conf"
)

// luksRoot is the encrypted root of one build.
type luksRoot struct {
	// UUID is the LUKS header's UUID; the mapping is named luks-UUID, the
	// name dracut's own udev rule gives a LUKS device, so that the two do
	// not open it twice.
	UUID string
	// BootFSUUID is the /boot file system's UUID, chosen with the root's.
	BootFSUUID string
}

// Name is the device-mapper name of the opened root.
func (r *luksRoot) Name() string { return "luks-" + r.UUID }

// newLUKSRoot makes the identifiers of a build's encrypted root.
func newLUKSRoot(d diskIDs) (*luksRoot, error) {
	r := &luksRoot{}
	if err := d.uuids(map[string]*string{"LUKS2 header": &r.UUID, "boot file system": &r.BootFSUUID}); err != nil {
		return nil, err
	}
	return r, nil
}

// crypttab is /etc/crypttab, for the initramfs (dracut copies it in) and
// the booted system alike. systemd-cryptsetup tries the TPM2 token first;
// while none is enrolled (the first boot) it falls back to the empty
// passphrase of key slot 0 (try-empty-password). Once first boot has wiped
// slot 0, a host whose TPM2 no longer unseals gets a passphrase prompt: the
// recovery key.
func (r *luksRoot) crypttab() string {
	return "# Written by the gpuhost-rootfs builder: the root is LUKS2, unlocked by the TPM2\n" +
		"# once first boot has enrolled it (gpuhost-luks-enroll.service), and until then\n" +
		"# by the empty passphrase of the one-time key slot 0, which that wipes.\n" +
		fmt.Sprintf("%s UUID=%s none luks,discard,x-initrd.attach,x-systemd.device-timeout=10min,tpm2-device=auto,try-empty-password=yes\n", r.Name(), r.UUID)
}

// dracutConfFile is the image's dracut configuration: the systemd, crypt
// and tpm2-tss modules (tpm2-tss brings the TPM drivers and the TSS
// libraries systemd-cryptsetup loads), crypttab (dracut copies it only when
// host-only), in an initramfs that boots any machine, since the image is
// made on one machine and booted on others, and reproducible (dracut's
// file times and cpio order fixed), so that two bakes of one lock differ
// in it as little as dracut allows. The initramfs holds no key. It is
// gzip at level 6, which every kernel and boot loader reads with no new
// package in the image: dracut's own choice, gzip -9, spends many times
// the CPU on a generic initramfs's modules for a file hardly smaller
// (docs/testing.md).
const dracutConfFile = `# Written by the gpuhost-rootfs builder: the root is LUKS2 and unlocked in
# the initramfs by systemd-cryptsetup, from the TPM2.
hostonly="no"
reproducible="yes"
compress="gzip -n -6"
add_dracutmodules+=" systemd crypt tpm2-tss "
install_items+=" /etc/crypttab "
`

// dracutScript makes the initramfs of each kernel with the image's own
// dracut, in the chroot.
func dracutScript(releases []string) string {
	var b strings.Builder
	b.WriteString("set -eu\n")
	for _, rel := range releases {
		fmt.Fprintf(&b, "dracut --force --kver %s /boot/initrd.img-%s\n", rel, rel)
	}
	return b.String()
}

// enrollConf is the first boot's to-do file, read by the enrol script.
func (r *luksRoot) enrollConf(pcrs []int) string {
	ps := make([]string, len(pcrs))
	for i, p := range pcrs {
		ps[i] = strconv.Itoa(p)
	}
	return fmt.Sprintf("# Written by the gpuhost-rootfs builder; gpuhost-luks-enroll removes it once done.\nLUKS_UUID=%s\nLUKS_NAME=%s\nPROVISION_SLOT=0\nREENCRYPT=1\nTPM2_PCRS=%s\n",
		r.UUID, r.Name(), strings.Join(ps, "+"))
}

// enrollUnit runs the enrolment once, on the first boot, before anything
// that reports on the host (the selftest reads the key slots it leaves).
const enrollUnit = `# Written by the gpuhost-rootfs builder: replace the image's one-time
# provisioning key with a key sealed to this host's TPM2.
[Unit]
Description=Seal the root's LUKS2 key to this host's TPM2 and wipe the provisioning key
Documentation=man:systemd-cryptenroll(1)
ConditionPathExists=/etc/gpuhost/luks-enroll.conf
After=local-fs.target
Before=gpuhost-selftest.service gpuhost-agentd.service multi-user.target

[Service]
Type=oneshot
RemainAfterExit=yes
# The re-encryption takes as long as the image's part of the disk does to
# rewrite; it resumes if stopped, but is not to be stopped for time.
TimeoutStartSec=infinity
ExecStart=/usr/local/lib/gpuhost/gpuhost-luks-enroll

[Install]
WantedBy=multi-user.target
`

// enrollScriptBody gives the root a volume key of the host's own, then
// enrols the TPM2 and wipes the provisioning key slot in one
// systemd-cryptenroll call (it wipes after it has enrolled), unlocking
// with the slot's empty passphrase. Every host booted from one image starts
// with the image's volume key, which anyone who holds the image can read
// through the empty slot; wiping the slot alone would leave each host's
// disk readable with the key taken from the image, so first boot
// re-encrypts the volume online first (cryptsetup reencrypt, resumable
// after a crash: the header records its progress, and --resume-only goes
// on from there). Only the image's part of the
// partition is re-encrypted: what gpuhost-growroot added was never written.
// A host with no TPM2 keeps slot 0 and says so: the unit fails, and the
// slot stays until the host has one.
var enrollScriptBody = strings.NewReplacer("@KDF@", strings.Join(provisionKDF, " "), "@ONLY_SLOT@", onlySlotSed).Replace(enrollScriptTemplate)

// onlySlotSed prints the numbers of the LUKS2 key slots in luksDump's
// listing, one a line.
const onlySlotSed = `sed -n '/^Keyslots:/,/^Tokens:/s/^  \([0-9][0-9]*\): luks2$/\1/p'`

// enrollScriptTemplate is enrollScriptBody before the KDF and the slot
// listing are put in.
const enrollScriptTemplate = `#!/bin/sh
# gpuhost-luks-enroll: first boot of an image whose root is LUKS2 (written by
# the gpuhost-rootfs builder). Reads /etc/gpuhost/luks-enroll.conf.
set -eu
PATH=/usr/sbin:/usr/bin:/sbin:/bin
conf=/etc/gpuhost/luks-enroll.conf
. "$conf"
dev=/dev/disk/by-uuid/$LUKS_UUID
say() { echo "gpuhost-luks-enroll: $*"; }
if [ ! -e /dev/tpmrm0 ] && [ ! -e /dev/tpm0 ]; then
	say "no TPM2 device on this host: the root keeps the image's one-time key slot $PROVISION_SLOT" >&2
	exit 1
fi
empty=$(mktemp)
trap 'rm -f "$empty"' EXIT
# The only key slot the header has (the provisioning one, renumbered by a
# re-encryption).
only_slot() {
	cryptsetup luksDump "$dev" | @ONLY_SLOT@
}
if [ "${REENCRYPT:-0}" = 1 ]; then
	# The mapping is still the image's size: the data to re-encrypt.
	size=$(blockdev --getsize64 "/dev/mapper/$LUKS_NAME")
	if cryptsetup luksDump "$dev" | grep -q '^Requirements:.*online-reencrypt'; then
		# A crash stopped it: go on from where the header says it got to.
		say "resuming the re-encryption of $dev"
		cryptsetup reencrypt --batch-mode --resume-only --key-file "$empty" "$dev"
	else
		say "re-encrypting the first $size bytes of $dev with a new volume key of this host's own"
		cryptsetup reencrypt --batch-mode --key-file "$empty" --key-slot "$PROVISION_SLOT" --device-size "$size" \
			@KDF@ "$dev"
	fi
	slot=$(only_slot)
	case "$slot" in
	"" | *[!0-9]*)
		say "after the re-encryption $dev has key slots '$slot', not one" >&2
		exit 1
		;;
	esac
	# Done once: a crash from here on must not re-encrypt again.
	sed -e "s/^REENCRYPT=1$/REENCRYPT=done/" -e "s/^PROVISION_SLOT=.*/PROVISION_SLOT=$slot/" "$conf" >"$conf.new"
	mv "$conf.new" "$conf"
	PROVISION_SLOT=$slot
fi
# gpuhost-growroot.service grew the partition, but systemd-growfs cannot
# resize the open LUKS2 mapping without a key (crypt_resize: EPERM), so
# the file system stayed the image's size: resize the mapping with the
# one-time slot while it is there, then the file system. systemd-growfs
# still logs its own crypt_resize's EPERM, then grows / into the mapping,
# which is already the partition's size. Neither failing stops the
# enrolment.
if cryptsetup resize --key-file "$empty" "$LUKS_NAME"; then
	/usr/lib/systemd/systemd-growfs / || say "growing / failed" >&2
else
	say "resizing $LUKS_NAME to its grown partition failed" >&2
fi
# The image's own recovery escrow, if it has one: the last moment a
# passphrase (the empty one) still opens the volume.
hook=/etc/gpuhost/luks-recovery-hook
if [ -x "$hook" ]; then
	say "running $hook"
	"$hook" "$dev" "$empty"
fi
say "sealing a new key of $dev to the TPM2 (PCRs $TPM2_PCRS) and wiping key slot $PROVISION_SLOT"
systemd-cryptenroll --unlock-key-file="$empty" --tpm2-device=auto --tpm2-pcrs="$TPM2_PCRS" \
	--wipe-slot="$PROVISION_SLOT" "$dev"
rm -f "$conf"
say "done: $(cryptsetup luksDump "$dev" | grep -c 'systemd-tpm2') TPM2 token(s)"
`

// stepLUKSCrypttab makes the root's identifiers and writes crypttab and
// the dracut configuration into the rootfs. It runs before the
// provisioners, as the GRUB defaults do, so that the manifest gpuhost-gpu
// writes records the crypttab the image ships (its config digests include
// /etc/crypttab): written after them, the booted host's drift found
// /etc/crypttab new since the baseline (GH-DRIFT-008).
type stepLUKSCrypttab struct{}

func (s *stepLUKSCrypttab) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	root, err := os.OpenRoot(state.Get(stateRootfs).(string))
	if err != nil {
		return halt(state, err)
	}
	defer root.Close()
	for _, tool := range []string{"usr/bin/dracut", "usr/sbin/cryptsetup", "usr/bin/systemd-cryptenroll", "usr/bin/tpm2"} {
		if _, err := root.Lstat(tool); err != nil {
			return halt(state, fmt.Errorf("encryption.luks2: the image has no /%s; it needs cryptsetup-bin, dracut, tpm2-tools and systemd 250 or later", tool))
		}
	}
	if err := checkNoCrypttab(root); err != nil {
		return halt(state, err)
	}
	r, err := newLUKSRoot(state.Get(stateConfig).(*Config).diskIDs())
	if err != nil {
		return halt(state, err)
	}
	if err := writeRootFile(root, "etc/crypttab", r.crypttab(), 0o644); err != nil {
		return halt(state, err)
	}
	if err := writeRootFile(root, dracutConf, dracutConfFile, 0o644); err != nil {
		return halt(state, err)
	}
	state.Put(stateLUKS, r)
	return multistep.ActionContinue
}

func (s *stepLUKSCrypttab) Cleanup(multistep.StateBag) {}

// checkCrypttabKept refuses a rootfs whose crypttab a provisioner changed
// after the builder wrote it: the disk is made to open what the builder
// wrote, and the manifest recorded what the provisioner saw.
func checkCrypttabKept(root *os.Root, r *luksRoot) error {
	b, err := root.ReadFile("etc/crypttab")
	if err != nil {
		return fmt.Errorf("encryption.luks2: reading /etc/crypttab the builder wrote: %w", err)
	}
	if string(b) != r.crypttab() {
		return fmt.Errorf("encryption.luks2: a provisioner changed /etc/crypttab, which the builder writes to open the root %s; leave it as written", r.Name())
	}
	return nil
}

// stepLUKSInitramfs makes the initramfs of each of the image's kernels
// with dracut, from the crypttab stepLUKSCrypttab wrote. It runs after
// the provisioners (whatever they install is in it) while their mounts are
// still up: dracut reads /proc, /sys and /dev of the chroot. It is the one
// initramfs an encrypted build makes: the provisioners run with the
// kernel's initramfs hooks told to skip (initrdOff).
type stepLUKSInitramfs struct{}

func (s *stepLUKSInitramfs) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	ui := state.Get(stateUI).(packersdk.Ui)
	rootfs := state.Get(stateRootfs).(string)
	ns := state.Get(stateMountNS).(*mountNS)
	r := state.Get(stateLUKS).(*luksRoot)
	root, err := os.OpenRoot(rootfs)
	if err != nil {
		return halt(state, err)
	}
	defer root.Close()
	if err := checkCrypttabKept(root, r); err != nil {
		return halt(state, err)
	}
	kernels, err := bootKernels(root, false)
	if err != nil {
		return halt(state, fmt.Errorf("finding the image's kernel: %w", err))
	}
	if len(kernels) == 0 {
		return halt(state, fmt.Errorf("encryption: /boot of the rootfs has no vmlinuz-RELEASE; kernel_package %q installed none", c.KernelPackage))
	}
	releases := make([]string, len(kernels))
	for i, k := range kernels {
		releases[i] = k.Release
	}
	ui.Say(fmt.Sprintf("Making the initramfs of %s with dracut (systemd, crypt, tpm2-tss) for the LUKS2 root %s", strings.Join(releases, ", "), r.UUID))
	line, err := ns.Wrap("chroot " + shellQuote(rootfs) + " /bin/sh -c " + shellQuote(dracutScript(releases)))
	if err != nil {
		return halt(state, err)
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", line)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	if err := runStreaming(cmd, ui); err != nil {
		return halt(state, fmt.Errorf("encryption: dracut in the rootfs: %w", err))
	}
	return multistep.ActionContinue
}

func (s *stepLUKSInitramfs) Cleanup(multistep.StateBag) {}

// checkNoCrypttab refuses a rootfs whose /etc/crypttab already opens
// something: the builder writes the root's, and which of two entries a boot
// would use for / is not for it to guess. Comments (Debian's cryptsetup
// ships one) are fine.
func checkNoCrypttab(root *os.Root) error {
	b, err := root.ReadFile("etc/crypttab")
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading /etc/crypttab: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 0 && !strings.HasPrefix(f[0], "#") {
			return fmt.Errorf("encryption.luks2: /etc/crypttab of the rootfs already opens %q; the builder writes the root's own entry", f[0])
		}
	}
	return nil
}

// installLUKSEnroll writes the first boot's enrolment into the rootfs.
func installLUKSEnroll(root *os.Root, r *luksRoot, pcrs []int) error {
	if err := writeRootFile(root, luksStateFile, r.enrollConf(pcrs), 0o600); err != nil {
		return err
	}
	if err := writeRootFile(root, luksEnrollScript, enrollScriptBody, 0o755); err != nil {
		return err
	}
	return installUnit(root, "gpuhost-luks-enroll.service", enrollUnit, "multi-user.target.wants")
}

// luksSectorSize is the encryption sector of a root partition of
// partBytes (see the top of this file).
func luksSectorSize(partBytes int64) int {
	if partBytes >= 1<<30 {
		return 4096
	}
	return 512
}

// luksFormatArgs are cryptsetup's arguments for the root's header. The
// argon2id cost is the lowest cryptsetup accepts, deliberately: the only
// key slot the image carries holds the empty passphrase, which no PBKDF
// cost protects, while a cost benchmarked on the build machine would take
// a minute to open in a slow or small first boot (the initramfs under
// emulation, a VM with little memory). The slot first boot enrols for the
// TPM2 holds a random key.
func luksFormatArgs(r *luksRoot, sectorSize int, volumeKey, keyFile, file string) []string {
	args := []string{"luksFormat", "--batch-mode", "--type", "luks2",
		"--cipher", luksCipher, "--key-size", strconv.Itoa(luksKeyBits), "--sector-size", strconv.Itoa(sectorSize),
		"--hash", "sha256"}
	args = append(args, provisionKDF...)
	return append(args, "--uuid", r.UUID, "--label", "gpuhost-root", "--key-slot", "0",
		"--volume-key-file", volumeKey, "--key-file", keyFile, file)
}

// provisionKDF is the KDF of the one-time provisioning key slot, at build
// and again when first boot's re-encryption rewrites it: see
// luksFormatArgs.
var provisionKDF = []string{"--pbkdf", "argon2id", "--pbkdf-force-iterations", "4", "--pbkdf-memory", "65536", "--pbkdf-parallel", "1"}
