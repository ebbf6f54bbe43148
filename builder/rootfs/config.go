//go:generate packer-sdc mapstructure-to-hcl2 -type Config,EncryptionConfig
//go:generate sh gendocs.sh packer-sdc ../../docs/builder-rootfs.mdx

package rootfs

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/packer-plugin-sdk/common"
	"github.com/hashicorp/packer-plugin-sdk/template/config"
	"github.com/hashicorp/packer-plugin-sdk/template/interpolate"

	"github.com/gpuhost/gpuhost/builder/internal/configerr"
	"github.com/gpuhost/gpuhost/manifest/lock"
)

// Config is the configuration of the rootfs builder (`source "gpuhost-rootfs"`).
type Config struct {
	common.PackerConfig `mapstructure:",squash"`

	// The release to bootstrap: `jammy` or `noble` (Ubuntu), or `bookworm` (Debian).
	Suite string `mapstructure:"suite" required:"true"`
	// `ubuntu` or `debian`. Derived from `suite` when empty; when set it must match it.
	Distribution string `mapstructure:"distribution" required:"false"`
	// The mmdebstrap variant. Defaults to `minbase` (essential packages and apt only).
	Variant string `mapstructure:"variant" required:"false"`
	// Archive components to enable, for example `["main", "contrib", "non-free", "non-free-firmware"]`.
	// Defaults to `["main"]` for Debian and `["main", "restricted", "universe"]` for Ubuntu.
	Components []string `mapstructure:"components" required:"false"`
	// A keyring file or directory that apt trusts during the bootstrap (mmdebstrap `--keyring`).
	// Needed when the build machine has no keyring for the distribution, for example
	// an Ubuntu suite bootstrapped on a Debian machine.
	Keyring string `mapstructure:"keyring" required:"false"`
	// The archive URL to bootstrap from. When empty, the builder takes the first apt source of the
	// build machine (`/etc/apt/sources.list.d/*.sources`, then `/etc/apt/sources.list`) that serves
	// `suite`; for Debian suites any Debian mirror of the machine will do. The build fails, naming
	// this field, when no mirror is set and none is found. Exclusive with `snapshot`.
	Mirror string `mapstructure:"mirror" required:"false"`
	// A snapshot timestamp such as `20250101T000000Z`. The archive is then read as it was at that
	// time, from the Debian or Ubuntu snapshot service, which makes a build repeatable. Release files
	// of a snapshot expire, so their validity is not checked; their signatures still are.
	Snapshot string `mapstructure:"snapshot" required:"false"`
	// Packages to install on top of the variant during the bootstrap, as `name` or `name=version`.
	ExtraPackages []string `mapstructure:"extra_packages" required:"false"`
	// The directory the rootfs is built in, as `WORK_DIR/rootfs`, together with intermediate files.
	// Defaults to `output_dir`. Put it on a fast local disk; it must not be a network file system,
	// since device nodes and ownership must survive.
	WorkDir string `mapstructure:"work_dir" required:"false"`
	// A directory that keeps downloaded packages across builds. It is bind-mounted on the rootfs's
	// `/var/cache/apt/archives` during the bootstrap and while provisioners run, so a rebuild
	// downloads only what changed. The rootfs itself keeps no package files.
	AptCacheDir string `mapstructure:"apt_cache_dir" required:"false"`
	// A directory that keeps bootstrapped trees across builds, as zstd tarballs. Off when empty.
	// Each entry is keyed by a SHA-256 of everything that decides what mmdebstrap makes: suite,
	// variant, components, architecture, `extra_packages`, keyring, mirror or snapshot, the
	// mmdebstrap version and arguments, and the mirror's current `InRelease` file, fetched at build
	// time, so that an update of the mirror starts a fresh bootstrap. When that file cannot be
	// fetched the cache is skipped, with the reason in the build's output. A rebuild that finds its
	// key extracts the tree instead of running mmdebstrap; provisioners then run as before. The
	// newest 4 entries are kept, and an entry whose checksum does not match is removed and not used.
	// It must not be inside `output_dir` or `work_dir`, which a build removes, nor inside `apt_cache_dir`.
	BootstrapCacheDir string `mapstructure:"bootstrap_cache_dir" required:"false"`
	// What the build produces: `dir` (the rootfs directory), `tar` (`rootfs.tar.zst`),
	// `raw` (an ext4 file system image, `rootfs.raw`), `qcow2` (the same, compressed, `rootfs.qcow2`),
	// or `disk`: a bootable x86-64 disk (`disk.qcow2` or `disk.raw`, see `disk_format`) with a GPT
	// holding a BIOS boot partition, an EFI system partition and the ext4 root, the image's own
	// kernel and initramfs (`kernel_package`), and GRUB for both UEFI and BIOS firmware, built from
	// the image's own GRUB packages without touching the build machine's boot. The root is mounted
	// by UUID, the GRUB command line comes from the image's /etc/default/grub and its grub.d
	// drop-ins, as update-grub would make it, and first boot finds an empty /etc/machine-id, no SSH
	// host keys (generated then) and grows the root partition and file system to the disk
	// (systemd-repart and systemd-growfs). Defaults to `dir`.
	OutputFormat string `mapstructure:"output_format" required:"false"`
	// The file format of a `disk` output: `qcow2` (compressed, the default) or `raw`.
	DiskFormat string `mapstructure:"disk_format" required:"false"`
	// How the clusters of a qcow2 output (`output_format = "qcow2"`, or a `disk` in qcow2) are
	// compressed: `zlib` (the default), which every qcow2 reader opens, or `zstd`, which QEMU and
	// qemu-img read from 5.1 on and which compresses several times faster, to about the same size.
	QCOW2Compression string `mapstructure:"qcow2_compression" required:"false"`
	// Encrypt the root file system of a `disk` output at rest; see `encryption` below.
	Encryption EncryptionConfig `mapstructure:"encryption" required:"false"`
	// Boot a `disk` output under UEFI through the distribution's signed chain, so that it boots with
	// Secure Boot enforced: `shim-signed` and `grub-efi-amd64-signed` are installed with the
	// kernel, and the EFI system partition holds shim as `EFI/BOOT/BOOTX64.EFI` with the signed
	// GRUB (`grubx64.efi`) and MokManager (`mmx64.efi`) beside it, and the same under
	// `EFI/<distribution>/` with the fallback loader and a `grub.cfg` that reads the image's own.
	// Firmware with Microsoft's UEFI CA in db loads shim; shim verifies GRUB and the kernel with
	// the distribution's key, and modules signed with a Machine Owner Key (`mokutil --import`) are
	// trusted by the kernel. BIOS boot is unchanged. Off by default: the ESP then holds GRUB's own
	// unsigned core image.
	SecureBoot bool `mapstructure:"secure_boot" required:"false"`
	// The kernel a `disk` output boots, as `name` or `name=version`: installed during the bootstrap
	// together with GRUB's EFI and BIOS images (`grub-efi-amd64-bin`, `grub-pc-bin`), and its
	// initramfs made there. Defaults to `linux-image-amd64` (Debian) or `linux-image-generic`
	// (Ubuntu); a template pins an exact kernel, such as `linux-image-6.1.0-50-amd64=6.1.176-1`, and
	// holds it with the gpuhost-gpu provisioner's `hold { kernel = true }`.
	KernelPackage string `mapstructure:"kernel_package" required:"false"`
	// The kernel command line of a `disk` output, written as GRUB_CMDLINE_LINUX into the image's
	// /etc/default/grub when the image has none; provisioners add to it with
	// /etc/default/grub.d/*.cfg drop-ins. Defaults to `console=tty0 console=ttyS0,115200n8`, so that
	// a serial console (a cloud provider's, or QEMU's) shows the boot.
	KernelCmdline string `mapstructure:"kernel_cmdline" required:"false"`
	// Where the artifact is written. Defaults to `output-BUILDNAME`. It must not exist, unless
	// Packer runs with `-force`, which removes it first.
	OutputDir string `mapstructure:"output_dir" required:"false"`
	// The size of the file system image for `raw` and `qcow2`, or of the whole disk for `disk`, as
	// a number with an optional K, M, G or T suffix, for example `4G`. Required for those formats.
	// A disk's root file system gets all but its first 66 MiB, and grows at first boot when the disk
	// it is written to is larger.
	ImageSize string `mapstructure:"image_size" required:"false"`
	// Derive the identifiers of a `disk` output (its GPT's disk and partition GUIDs, the file
	// systems' UUIDs and the ESP's volume id, the LUKS2 header's UUID) from this string instead of
	// drawing them at random, as systemd-repart's `--seed` does: two bakes with the same seed and
	// the same lock then write the same fstab, crypttab, GRUB configuration and initramfs, and
	// their trees have the same digest. The volume key of an encrypted root stays random, and first
	// boot replaces it. Two disks one host attaches at once must not share a seed: the host could
	// not tell their file systems apart. Random when empty.
	DiskIDSeed string `mapstructure:"disk_id_seed" required:"false"`
	// The file systems mounted in the rootfs while provisioners run, by their path inside it.
	// Known paths: `/proc`, `/sys`, `/dev` (a bind of the build machine's `/dev`), `/dev/pts`
	// (a private devpts instance), `/run` and `/tmp` (tmpfs). Defaults to
	// `["/proc", "/sys", "/dev", "/run", "/dev/pts"]`; parents are always mounted first. They live in a private mount
	// namespace: the build machine never sees them, and they vanish when the build ends,
	// however it ends.
	Mounts []string `mapstructure:"mounts" required:"false"`
	// Remove the rootfs directory once a `tar`, `raw` or `qcow2` output is written. By default it
	// is kept beside the output, so that post-processors can scan it.
	RemoveRootfs bool `mapstructure:"remove_rootfs" required:"false"`
	// A lock file (gpuhost.lock/v1, written by `gpuhost lock --from MANIFEST`) that the bootstrap
	// is held to: every locked version is apt's candidate while mmdebstrap resolves the variant and
	// `extra_packages` (an apt preferences file that lives only for the bootstrap), and the tree it
	// makes must hold nothing the lock does not, each package at its locked version and, where
	// `apt_cache_dir` keeps its .deb, with its locked sha256; the build fails naming every package
	// that differs. The lock's snapshot must be `snapshot`, and its mirror `mirror` when both are
	// set. Give the gpuhost-gpu provisioner the same file: its plan installs the rest of the lock
	// and verifies the whole inventory, every .deb digest and the apt sources and keyrings.
	LockFile string `mapstructure:"lock_file" required:"false"`

	ctx interpolate.Context
	// hostRoot is where the build machine's apt sources are read from: "/" in a
	// build, a fake tree in tests.
	hostRoot string
	// lock is lock_file, read by Prepare.
	lock *lock.Lock
	// mirrorErr says why no default mirror was found; it is reported by Run,
	// not Prepare, so that `packer validate` of an Ubuntu template still passes
	// on a machine that only reaches Debian.
	mirrorErr error
}

// EncryptionConfig is the `encryption` block of a `disk` output.
//
// With `luks2 = true` the root file system is a LUKS2 volume (aes-xts-plain64, a 512-bit volume
// key, argon2id key slots) opened by the image's own initramfs, made with dracut and its systemd,
// crypt and tpm2-tss modules; the kernel and initramfs move to an unencrypted ext4 `/boot`
// partition, since GRUB 2.06 cannot read an argon2id key slot. No key that every host would
// share unlocks it for long: the image carries one one-time key slot, the empty passphrase
// (crypttab's `try-empty-password`), which the first boot unlocks with; it then seals a new key
// to the host's TPM2 with `systemd-cryptenroll --tpm2-device=auto --tpm2-pcrs=...` and wipes
// that slot; every later boot unlocks from the TPM2 with no passphrase. A host with no TPM2
// keeps the one-time slot, and its enrolment unit fails, saying so.
//
// Until its first boot an image is only as secret as the channel it is distributed through:
// anyone holding the disk file can open it. The LUKS volume key is made per build, so every
// host booted from one image shares it until it is re-encrypted (`cryptsetup reencrypt`);
// wiping key slots does not change it. The builder's page says why the one-time secret is the
// empty passphrase rather than a random key, and how to enrol a recovery key.
type EncryptionConfig struct {
	// Put the root on LUKS2, unlocked at first boot by the one-time key slot and then by the TPM2.
	// Needs `cryptsetup-bin`, `dracut` and `tpm2-tools` in the image; the builder adds them to the
	// bootstrap. Off by default.
	LUKS2 bool `mapstructure:"luks2" required:"false"`
	// The TPM2 PCRs first boot seals the key to, as systemd-cryptenroll's `--tpm2-pcrs`. Defaults
	// to `[7]` (the Secure Boot state and its keys), which survives kernel and initramfs updates;
	// a host whose firmware changes PCR 7 (Secure Boot toggled, its key databases updated)
	// then needs its recovery key.
	TPM2PCRs []int `mapstructure:"tpm2_pcrs" required:"false"`
}

// distributions maps each supported suite to its distribution.
var distributions = map[string]string{
	"jammy":    "ubuntu",
	"noble":    "ubuntu",
	"bookworm": "debian",
}

// variants are those mmdebstrap accepts.
var variants = []string{"extract", "custom", "essential", "apt", "required", "minbase", "buildd", "important", "debootstrap", "-", "standard"}

var formats = []string{"dir", "tar", "raw", "qcow2", "disk"}

var diskFormats = []string{"qcow2", "raw"}

// qcow2Compressions are the compression types qemu-img writes a qcow2 with.
var qcow2Compressions = []string{"zlib", "zstd"}

// defaultKernels is the kernel meta package of each distribution.
var defaultKernels = map[string]string{
	"debian": "linux-image-amd64",
	"ubuntu": "linux-image-generic",
}

// bootPackages are what a disk's boot loader is built from, besides the kernel.
var bootPackages = []string{"grub-efi-amd64-bin", "grub-pc-bin"}

// secureBootPackages are the signed boot chain of secure_boot: shim signed
// by Microsoft (and MokManager and the fallback by the distribution, in
// shim-helpers-amd64-signed, which it depends on) and GRUB signed by the
// distribution.
var secureBootPackages = []string{"shim-signed", "grub-efi-amd64-signed"}

// luksPackages are what an encrypted root needs in the image: cryptsetup
// for the initramfs and luksDump, dracut (which replaces initramfs-tools:
// its cryptroot cannot unlock from a TPM2) and tpm2-tools, whose `tpm2`
// binary dracut's tpm2-tss module requires before it installs the TSS
// libraries systemd-cryptsetup loads.
var luksPackages = []string{"cryptsetup-bin", "dracut", "tpm2-tools"}

const defaultKernelCmdline = "console=tty0 console=ttyS0,115200n8"

// minDiskSize leaves the root partition room for at least a minbase tree.
const minDiskSize = 256 << 20

var (
	componentRE = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	// packageRE accepts a Debian package name with an optional version pin;
	// anything else could be read by apt as an option or a pattern.
	packageRE  = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+(=[0-9A-Za-z.+~:-]+)?$`)
	sizeRE     = regexp.MustCompile(`^[1-9][0-9]*[KMGT]?$`)
	snapshotRE = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z$`)
)

// mountKinds are the mounts the builder knows how to make, by path in the rootfs.
var mountKinds = map[string]mountSpec{
	"/proc":    {fstype: "proc", source: "proc", opts: "nosuid,nodev,noexec"},
	"/sys":     {fstype: "sysfs", source: "sysfs", opts: "ro,nosuid,nodev,noexec"},
	"/dev":     {bind: "/dev"},
	"/dev/pts": {fstype: "devpts", source: "devpts", opts: "newinstance,ptmxmode=0666,mode=0620,gid=5"},
	"/run":     {fstype: "tmpfs", source: "tmpfs", opts: "mode=0755,nosuid,nodev"},
	"/tmp":     {fstype: "tmpfs", source: "tmpfs", opts: "mode=1777,nosuid,nodev"},
}

var defaultMounts = []string{"/proc", "/sys", "/dev", "/run", "/dev/pts"}

// Prepare decodes and validates raws into c. It reports every problem at
// once, each naming its field.
func (c *Config) Prepare(raws ...interface{}) ([]string, error) {
	err := config.Decode(c, &config.DecodeOpts{
		PluginType:         BuilderID,
		Interpolate:        true,
		InterpolateContext: &c.ctx,
	}, raws...)
	if err != nil {
		return nil, err
	}
	if c.hostRoot == "" {
		c.hostRoot = "/"
	}
	errs := c.prepareSource()
	outErrs, warns := c.prepareOutput()
	errs = append(errs, outErrs...)
	errs = append(errs, c.preparePaths()...)
	mountErrs, mountWarns := c.prepareMounts()
	return append(warns, mountWarns...), configerr.Check("gpuhost-rootfs", append(errs, mountErrs...))
}

// prepareSource checks and completes what the bootstrap reads: the suite
// and distribution, variant, components, keyring, the mirror or snapshot,
// the lock and the extra packages.
func (c *Config) prepareSource() []string {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }

	dist, known := distributions[c.Suite]
	switch {
	case c.Suite == "":
		bad("suite is required: jammy, noble or bookworm")
	case !known:
		bad("suite: unsupported %q; use jammy, noble or bookworm", c.Suite)
	}
	switch {
	case c.Distribution == "":
		c.Distribution = dist
	case c.Distribution != "ubuntu" && c.Distribution != "debian":
		bad("distribution: unsupported %q; use ubuntu or debian", c.Distribution)
	case known && c.Distribution != dist:
		bad("distribution: %q does not match suite %q, which is %s", c.Distribution, c.Suite, dist)
	}

	if c.Variant == "" {
		c.Variant = "minbase"
	} else if !slices.Contains(variants, c.Variant) {
		bad("variant: unsupported %q; use one of %s", c.Variant, strings.Join(variants, ", "))
	}

	if len(c.Components) == 0 {
		if c.Distribution == "ubuntu" {
			c.Components = []string{"main", "restricted", "universe"}
		} else {
			c.Components = []string{"main"}
		}
	}
	for _, comp := range c.Components {
		if !componentRE.MatchString(comp) {
			bad("components: invalid component %q", comp)
		}
	}

	if c.Keyring != "" {
		if _, err := os.Stat(c.Keyring); err != nil {
			bad("keyring: %v", err)
		}
	}

	errs = append(errs, c.prepareMirror(known)...)

	for _, p := range c.ExtraPackages {
		if !packageRE.MatchString(p) {
			bad("extra_packages: invalid package %q; use name or name=version", p)
		}
	}

	return errs
}

// prepareOutput checks and completes what the build writes: the output
// format, the image size, and the disk's own settings (or the warning that
// they are ignored).
func (c *Config) prepareOutput() (errs, warns []string) {
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if c.OutputFormat == "" {
		c.OutputFormat = "dir"
	} else if !slices.Contains(formats, c.OutputFormat) {
		bad("output_format: unsupported %q; use dir, tar, raw, qcow2 or disk", c.OutputFormat)
	}
	switch {
	case c.OutputFormat == "raw" || c.OutputFormat == "qcow2" || c.OutputFormat == "disk":
		if c.ImageSize == "" {
			bad("image_size is required for output_format %q, for example \"4G\"", c.OutputFormat)
		} else if !sizeRE.MatchString(c.ImageSize) {
			bad("image_size: invalid %q; use a number with an optional K, M, G or T suffix", c.ImageSize)
		} else if n, err := parseSize(c.ImageSize); c.OutputFormat == "disk" && (err != nil || n < minDiskSize) {
			bad("image_size: %q is too small for a disk; give it at least 256M", c.ImageSize)
		}
	case c.ImageSize != "":
		warns = append(warns, fmt.Sprintf("image_size is ignored for output_format %q", c.OutputFormat))
	}
	qcow2 := c.OutputFormat == "qcow2" || c.OutputFormat == "disk" && (c.DiskFormat == "" || c.DiskFormat == "qcow2")
	switch {
	case c.QCOW2Compression != "" && !qcow2:
		warns = append(warns, fmt.Sprintf("qcow2_compression is ignored: the output is not a qcow2 (output_format %q, disk_format %q)", c.OutputFormat, c.DiskFormat))
	case c.QCOW2Compression == "":
		c.QCOW2Compression = "zlib"
	case !slices.Contains(qcow2Compressions, c.QCOW2Compression):
		bad("qcow2_compression: unsupported %q; use zlib or zstd", c.QCOW2Compression)
	}
	if c.OutputFormat == "disk" {
		errs = append(errs, c.prepareDisk()...)
	} else {
		if c.Encryption.LUKS2 || len(c.Encryption.TPM2PCRs) > 0 {
			warns = append(warns, fmt.Sprintf("encryption is ignored for output_format %q: only a disk has a root partition to encrypt", c.OutputFormat))
		}
		for _, f := range []struct{ name, val string }{{"disk_format", c.DiskFormat}, {"kernel_package", c.KernelPackage}, {"kernel_cmdline", c.KernelCmdline}} {
			if f.val != "" {
				warns = append(warns, fmt.Sprintf("%s is ignored for output_format %q", f.name, c.OutputFormat))
			}
		}
		if c.SecureBoot {
			warns = append(warns, fmt.Sprintf("secure_boot is ignored for output_format %q: only a disk boots", c.OutputFormat))
		}
	}
	if c.RemoveRootfs && c.OutputFormat == "dir" {
		bad("remove_rootfs: cannot remove the rootfs when it is the output (output_format \"dir\")")
	}

	return errs, warns
}

// prepareMirror chooses the archive: the snapshot's, the mirror given, or
// the build machine's own; and holds a lock to the archive it was made from.
// known says the suite is one the builder knows.
func (c *Config) prepareMirror(known bool) []string {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	switch {
	case c.Snapshot != "" && c.Mirror != "":
		bad("snapshot and mirror are exclusive: a snapshot chooses its own mirror")
	case c.Snapshot != "":
		m, err := snapshotMirror(c.Distribution, c.Snapshot)
		if err != nil {
			bad("snapshot: %v", err)
		} else {
			c.Mirror = m
		}
	case c.Mirror != "":
		if err := checkMirror(c.Mirror); err != nil {
			bad("mirror: %v", err)
		}
	case known:
		m, err := hostMirror(c.hostRoot, c.Distribution, c.Suite)
		if err != nil {
			c.mirrorErr = fmt.Errorf("mirror: none set, and %w; set mirror or snapshot", err)
		} else {
			c.Mirror = m
		}
	}

	if c.LockFile != "" {
		if l, err := lock.ReadFile(c.LockFile); err != nil {
			bad("lock_file: %v", err)
		} else {
			c.lock = l
			if l.Snapshot != c.Snapshot {
				bad("lock_file: the lock %s was made from snapshot %q, this build reads snapshot %q", c.LockFile, l.Snapshot, c.Snapshot)
			}
			if l.Mirror != "" && c.Mirror != "" && c.Snapshot == "" && l.Mirror != c.Mirror {
				bad("lock_file: the lock %s was made from mirror %s, this build reads %s", c.LockFile, l.Mirror, c.Mirror)
			}
		}
	}
	return errs
}

// preparePaths makes the build's directories absolute and refuses those
// that mount options and hook commands cannot carry, or that would hold
// the bootstrap cache where a build removes or exposes it.
func (c *Config) preparePaths() []string {
	var errs []string
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if c.OutputDir == "" {
		c.OutputDir = "output-" + c.PackerBuildName
	}
	if c.WorkDir == "" {
		c.WorkDir = c.OutputDir
	}
	for _, p := range []struct {
		name string
		val  *string
	}{{"output_dir", &c.OutputDir}, {"work_dir", &c.WorkDir}, {"apt_cache_dir", &c.AptCacheDir}, {"bootstrap_cache_dir", &c.BootstrapCacheDir}} {
		if *p.val == "" {
			continue
		}
		abs, err := filepath.Abs(*p.val)
		if err != nil {
			bad("%s: %v", p.name, err)
			continue
		}
		// The paths end up in mount options and hook commands; refuse the
		// characters those treat specially rather than quote for each.
		if strings.ContainsAny(abs, ",'\"\\\n\t ") {
			bad("%s: %q contains a space, quote, comma or backslash", p.name, abs)
		}
		if abs == "/" {
			bad("%s: must not be /", p.name)
		}
		*p.val = abs
	}

	if c.BootstrapCacheDir != "" {
		for _, d := range []struct{ name, dir string }{{"output_dir", c.OutputDir}, {"work_dir", c.WorkDir}, {"apt_cache_dir", c.AptCacheDir}} {
			// Inside output_dir, -force would remove the cache; inside the
			// apt cache, provisioners would see it on /var/cache/apt/archives.
			if d.dir != "" && within(c.BootstrapCacheDir, d.dir) {
				bad("bootstrap_cache_dir: %s is inside %s %s", c.BootstrapCacheDir, d.name, d.dir)
			}
		}
	}

	return errs
}

// prepareMounts checks the chroot's mounts and orders them parents first.
func (c *Config) prepareMounts() (errs, warns []string) {
	bad := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if len(c.Mounts) == 0 {
		c.Mounts = slices.Clone(defaultMounts)
	}
	seen := map[string]bool{}
	for _, m := range c.Mounts {
		if _, ok := mountKinds[m]; !ok {
			bad("mounts: unsupported %q; use /proc, /sys, /dev, /dev/pts, /run or /tmp", m)
		} else if seen[m] {
			bad("mounts: %q is listed twice", m)
		}
		seen[m] = true
	}
	if seen["/dev/pts"] && !seen["/dev"] {
		warns = append(warns, "mounts: /dev/pts without /dev mounts a devpts on the rootfs's own /dev")
	}
	// Mount parents before children, whatever order the user gave.
	slices.SortStableFunc(c.Mounts, func(a, b string) int { return strings.Count(a, "/") - strings.Count(b, "/") })

	return errs, warns
}

// cmdlineRE is what a kernel command line written into /etc/default/grub
// may hold: the file is sourced by a shell, inside double quotes.
var cmdlineRE = regexp.MustCompile(`^[A-Za-z0-9 ._,:=/+@%-]*$`)

// prepareDisk applies the defaults of a disk output and returns its problems.
func (c *Config) prepareDisk() []string {
	var errs []string
	if runtime.GOARCH != "amd64" {
		errs = append(errs, fmt.Sprintf("output_format: disk makes x86-64 (BIOS and UEFI) disks only; this build machine is %s", runtime.GOARCH))
	}
	if c.DiskFormat == "" {
		c.DiskFormat = "qcow2"
	} else if !slices.Contains(diskFormats, c.DiskFormat) {
		errs = append(errs, fmt.Sprintf("disk_format: unsupported %q; use qcow2 or raw", c.DiskFormat))
	}
	if c.KernelPackage == "" {
		c.KernelPackage = defaultKernels[c.Distribution]
	} else if !packageRE.MatchString(c.KernelPackage) {
		errs = append(errs, fmt.Sprintf("kernel_package: invalid package %q; use name or name=version", c.KernelPackage))
	}
	if c.KernelCmdline == "" {
		c.KernelCmdline = defaultKernelCmdline
	} else if !cmdlineRE.MatchString(c.KernelCmdline) {
		errs = append(errs, fmt.Sprintf("kernel_cmdline: %q has a quote, $, backslash or other character a shell would read; use plain key=value words", c.KernelCmdline))
	}
	e := &c.Encryption
	if !e.LUKS2 && len(e.TPM2PCRs) > 0 {
		errs = append(errs, "encryption.tpm2_pcrs: set only with encryption.luks2 = true")
	}
	if e.LUKS2 && len(e.TPM2PCRs) == 0 {
		e.TPM2PCRs = []int{7}
	}
	seen := map[int]bool{}
	for _, p := range e.TPM2PCRs {
		if p < 0 || p > 23 {
			errs = append(errs, fmt.Sprintf("encryption.tpm2_pcrs: %d is not a TPM2 PCR (0 to 23)", p))
		} else if seen[p] {
			errs = append(errs, fmt.Sprintf("encryption.tpm2_pcrs: %d is listed twice", p))
		}
		seen[p] = true
	}
	return errs
}

// encryptedDisk reports whether c builds a disk with a LUKS2 root. Such a
// build makes the image's initramfs itself, after the provisioners
// (stepLUKSInitramfs), so every initramfs a package's hook makes before
// that is thrown away.
func (c *Config) encryptedDisk() bool {
	return c.OutputFormat == "disk" && c.Encryption.LUKS2
}

// bootstrapPackages are the packages mmdebstrap installs beyond the variant:
// extra_packages, and for a disk its kernel and boot loader images.
func (c *Config) bootstrapPackages() []string {
	pkgs := slices.Clone(c.ExtraPackages)
	if c.OutputFormat != "disk" {
		return pkgs
	}
	names := map[string]bool{}
	for _, p := range pkgs {
		name, _, _ := strings.Cut(p, "=")
		names[name] = true
	}
	extra := append([]string{c.KernelPackage}, bootPackages...)
	if c.SecureBoot {
		extra = append(extra, secureBootPackages...)
	}
	if c.Encryption.LUKS2 {
		extra = append(extra, luksPackages...)
	}
	for _, p := range extra {
		if name, _, _ := strings.Cut(p, "="); p != "" && !names[name] {
			pkgs = append(pkgs, p)
		}
	}
	return pkgs
}

// snapshotMirror returns the snapshot archive URL of dist at timestamp ts.
// Plain http is deliberate: apt checks the Release signatures, and a minbase
// rootfs has no CA certificates for apt to use https later from inside it.
func snapshotMirror(dist, ts string) (string, error) {
	if !snapshotRE.MatchString(ts) {
		return "", fmt.Errorf("invalid timestamp %q; use YYYYMMDDTHHMMSSZ, for example 20250101T000000Z", ts)
	}
	if _, err := time.Parse("20060102T150405Z", ts); err != nil {
		return "", fmt.Errorf("invalid timestamp %q: %w", ts, err)
	}
	switch dist {
	case "debian":
		return "http://snapshot.debian.org/archive/debian/" + ts, nil
	case "ubuntu":
		return "http://snapshot.ubuntu.com/ubuntu/" + ts, nil
	}
	return "", fmt.Errorf("no snapshot service known for distribution %q", dist)
}

func checkMirror(m string) error {
	u, err := url.Parse(m)
	if err != nil {
		return err
	}
	switch u.Scheme {
	case "http", "https":
		if u.Host == "" {
			return fmt.Errorf("%q has no host", m)
		}
	case "file":
	default:
		return fmt.Errorf("%q: use an http, https or file URL", m)
	}
	return nil
}

// within says whether path is dir or below it; both are clean absolute paths.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}
