package rootfs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	"pault.ag/go/debian/version"
)

// kernel is one kernel the image boots: /boot/vmlinuz-Release with its
// /boot/initrd.img-Release.
type kernel struct{ Release string }

// imageKernels returns the kernels in the rootfs's /boot that have an
// initramfs, newest first.
func imageKernels(root *os.Root) ([]kernel, error) {
	return bootKernels(root, true)
}

// bootKernels returns the kernels in the rootfs's /boot, newest first: all
// of them, or with withInitrd only those beside their initramfs. An
// encrypted build's provisioners run with the initramfs hooks off, so a
// kernel they installed has none until the builder makes it.
func bootKernels(root *os.Root, withInitrd bool) ([]kernel, error) {
	entries, err := fs.ReadDir(root.FS(), "boot")
	if err != nil {
		return nil, fmt.Errorf("reading /boot: %w", err)
	}
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = e.Type().IsRegular()
	}
	var ks []kernel
	for name, regular := range names {
		rel, ok := strings.CutPrefix(name, "vmlinuz-")
		if ok && regular && (names["initrd.img-"+rel] || !withInitrd) && releaseRE.MatchString(rel) {
			ks = append(ks, kernel{rel})
		}
	}
	slices.SortFunc(ks, func(a, b kernel) int { return compareReleases(b.Release, a.Release) })
	return ks, nil
}

// releaseRE is a kernel release that may go into grub.cfg unquoted.
var releaseRE = regexp.MustCompile(`^[0-9][A-Za-z0-9.+_~-]*$`)

// compareReleases orders kernel releases as dpkg orders versions.
func compareReleases(a, b string) int {
	va, ea := version.Parse(a)
	vb, eb := version.Parse(b)
	if ea == nil && eb == nil {
		if c := version.Compare(va, vb); c != 0 {
			return c
		}
	}
	return strings.Compare(a, b)
}

// grubDefaults is the GRUB configuration of the image as update-grub reads
// it: /etc/default/grub, then /etc/default/grub.d/*.cfg.
type grubDefaults struct {
	Timeout       string
	Distributor   string
	Cmdline       string
	CmdlineDef    string
	Terminal      string
	TerminalIn    string
	TerminalOut   string
	SerialCommand string
}

// defaultGrubFile is /etc/default/grub for an image that has none (GRUB's
// -bin packages do not ship it). Its keys are those of Debian's own file,
// so that update-grub on the booted host, once grub-pc or grub-efi is
// installed, reads what this grub.cfg was made from.
const defaultGrubFile = `# Written by the gpuhost-rootfs builder (output_format "disk"): the
# settings the image's /boot/grub/grub.cfg was made from. update-grub reads
# this file and /etc/default/grub.d/*.cfg the same way.
GRUB_DEFAULT=0
GRUB_TIMEOUT=1
GRUB_DISTRIBUTOR=%s
GRUB_CMDLINE_LINUX_DEFAULT=""
GRUB_CMDLINE_LINUX="%s"
GRUB_TERMINAL="console serial"
GRUB_SERIAL_COMMAND="serial --unit=0 --speed=115200"
`

// grubDefaultsScript prints the variables grub-mkconfig uses, after
// sourcing the files it sources, one NAME=value a line.
const grubDefaultsScript = `set -e
unset GRUB_TIMEOUT GRUB_DISTRIBUTOR GRUB_CMDLINE_LINUX GRUB_CMDLINE_LINUX_DEFAULT GRUB_TERMINAL GRUB_TERMINAL_INPUT GRUB_TERMINAL_OUTPUT GRUB_SERIAL_COMMAND
if [ -f /etc/default/grub ]; then . /etc/default/grub; fi
for f in /etc/default/grub.d/*.cfg; do
	if [ -e "$f" ]; then . "$f"; fi
done
for v in GRUB_TIMEOUT GRUB_DISTRIBUTOR GRUB_CMDLINE_LINUX GRUB_CMDLINE_LINUX_DEFAULT GRUB_TERMINAL GRUB_TERMINAL_INPUT GRUB_TERMINAL_OUTPUT GRUB_SERIAL_COMMAND; do
	eval "printf '%s=%s\n' $v \"\${$v-}\""
done
`

// parseGrubDefaults reads grubDefaultsScript's output. Every value must be
// one that grub.cfg can carry as it is: GRUB's script language would read
// a quote, $ or ; in them.
func parseGrubDefaults(out string) (*grubDefaults, error) {
	d := &grubDefaults{}
	fields := map[string]*string{
		"GRUB_TIMEOUT": &d.Timeout, "GRUB_DISTRIBUTOR": &d.Distributor,
		"GRUB_CMDLINE_LINUX": &d.Cmdline, "GRUB_CMDLINE_LINUX_DEFAULT": &d.CmdlineDef,
		"GRUB_TERMINAL": &d.Terminal, "GRUB_TERMINAL_INPUT": &d.TerminalIn,
		"GRUB_TERMINAL_OUTPUT": &d.TerminalOut, "GRUB_SERIAL_COMMAND": &d.SerialCommand,
	}
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		name, val, ok := strings.Cut(line, "=")
		p, known := fields[name]
		if !ok || !known {
			return nil, fmt.Errorf("reading the image's GRUB defaults: unexpected line %q", line)
		}
		val = strings.Join(strings.Fields(val), " ")
		if !cmdlineRE.MatchString(val) {
			return nil, fmt.Errorf("the image's %s is %q: grub.cfg would read its quotes, $ or other characters as script", name, val)
		}
		*p = val
	}
	if d.Timeout == "" {
		d.Timeout = "5"
	}
	if _, err := strconv.Atoi(d.Timeout); err != nil {
		return nil, fmt.Errorf("the image's GRUB_TIMEOUT is %q, not a number of seconds", d.Timeout)
	}
	if d.Distributor == "" {
		d.Distributor = "Linux"
	}
	return d, nil
}

// terminals returns GRUB's input and output terminals, as grub-mkconfig
// derives them from GRUB_TERMINAL and its _INPUT and _OUTPUT variants.
func (d *grubDefaults) terminals() (in, out string) {
	in, out = d.TerminalIn, d.TerminalOut
	if in == "" {
		in = d.Terminal
	}
	if out == "" {
		out = d.Terminal
	}
	return in, out
}

// grubConfig renders /boot/grub/grub.cfg: one entry per kernel, the newest
// first and the default, each with the root by UUID and the command line
// update-grub would give it.
func grubConfig(d *grubDefaults, l *diskLayout, kernels []kernel) string {
	var b strings.Builder
	b.WriteString("# Written by the gpuhost-rootfs builder from /etc/default/grub and\n")
	b.WriteString("# /etc/default/grub.d/*.cfg, as update-grub would; update-grub on the\n")
	b.WriteString("# booted host writes its own in its place.\n")
	fmt.Fprintf(&b, "set default=0\nset timeout=%s\n", d.Timeout)
	in, out := d.terminals()
	if strings.Contains(in+" "+out, "serial") {
		cmd := d.SerialCommand
		if cmd == "" {
			cmd = "serial"
		}
		fmt.Fprintf(&b, "%s\n", cmd)
	}
	if in != "" {
		fmt.Fprintf(&b, "terminal_input %s\n", in)
	}
	if out != "" {
		fmt.Fprintf(&b, "terminal_output %s\n", out)
	}
	fmt.Fprintf(&b, "search --no-floppy --fs-uuid --set=root %s\n", l.grubFSUUID())
	args := strings.TrimSpace("ro " + d.Cmdline + " " + d.CmdlineDef)
	dir := l.grubBootDir()
	for _, k := range kernels {
		fmt.Fprintf(&b, "\nmenuentry '%s GNU/Linux, with Linux %s' --id 'gnulinux-%s' {\n", d.Distributor, k.Release, k.Release)
		b.WriteString("\tinsmod part_gpt\n\tinsmod ext2\n\tinsmod gzio\n")
		fmt.Fprintf(&b, "\techo 'Loading Linux %s ...'\n", k.Release)
		fmt.Fprintf(&b, "\tlinux %s/vmlinuz-%s root=UUID=%s %s\n", dir, k.Release, l.RootFSUUID, args)
		b.WriteString("\techo 'Loading initial ramdisk ...'\n")
		fmt.Fprintf(&b, "\tinitrd %s/initrd.img-%s\n}\n", dir, k.Release)
	}
	return b.String()
}

// grubLoadConfig is the configuration built into GRUB's core images: find
// the root by its UUID, then read /boot/grub/grub.cfg from it.
func grubLoadConfig(l *diskLayout) string {
	return fmt.Sprintf("search --no-floppy --fs-uuid --set=root %s\nset prefix=($root)%s/grub\n", l.grubFSUUID(), l.grubBootDir())
}

// grubFSUUID is the file system GRUB reads the kernel from: the root, or
// the /boot partition of an encrypted disk.
func (l *diskLayout) grubFSUUID() string {
	if l.LUKS != nil {
		return l.BootFSUUID
	}
	return l.RootFSUUID
}

// grubBootDir is where /boot is on the file system GRUB reads.
func (l *diskLayout) grubBootDir() string {
	if l.LUKS != nil {
		return ""
	}
	return "/boot"
}

// GRUB's core images: the modules built into each, enough to find the root
// by UUID on a GPT disk and read grub.cfg; grub.cfg loads the rest from
// /boot/grub/<platform>, where grub-install would also put them.
var (
	grubEFIModules  = []string{"part_gpt", "part_msdos", "fat", "ext2", "search", "search_fs_uuid", "normal", "configfile", "linux", "echo", "test", "gzio", "serial", "terminal", "efi_gop", "efi_uga", "all_video", "boot"}
	grubBIOSModules = []string{"biosdisk", "part_gpt", "part_msdos", "ext2", "search", "search_fs_uuid", "normal", "configfile", "linux", "echo", "test", "gzio", "serial", "terminal", "boot"}
)

// Where the boot-config step leaves GRUB's images in the rootfs: the
// places grub-install uses, so that a later grub-install replaces them.
const (
	grubCoreEFI  = "boot/grub/x86_64-efi/core.efi"
	grubCoreBIOS = "boot/grub/i386-pc/core.img"
	grubBootBIOS = "boot/grub/i386-pc/boot.img"
)

// grubImagesScript copies GRUB's modules into /boot/grub and makes the
// core images with the image's own grub-mkimage.
func grubImagesScript() string {
	return fmt.Sprintf(`set -eu
for p in x86_64-efi i386-pc; do
	[ -d /usr/lib/grub/$p ] || { echo "/usr/lib/grub/$p is missing: grub-efi-amd64-bin and grub-pc-bin must be installed" >&2; exit 1; }
	mkdir -p /boot/grub/$p
	cp /usr/lib/grub/$p/*.mod /usr/lib/grub/$p/*.lst /boot/grub/$p/
done
cp /usr/lib/grub/i386-pc/boot.img /%s
grub-mkimage -O x86_64-efi -d /usr/lib/grub/x86_64-efi -c /boot/grub/x86_64-efi/load.cfg -p /boot/grub -o /%s %s
grub-mkimage -O i386-pc -d /usr/lib/grub/i386-pc -c /boot/grub/i386-pc/load.cfg -p /boot/grub -o /%s %s
`, grubBootBIOS, grubCoreEFI, strings.Join(grubEFIModules, " "), grubCoreBIOS, strings.Join(grubBIOSModules, " "))
}

// runChroot runs a shell script in rootfs with chroot, nothing mounted:
// what it runs (GRUB's tools, the image's shell on its own files) needs no
// /proc or /dev.
func runChroot(ctx context.Context, rootfs, script string) (string, error) {
	cmd := exec.CommandContext(ctx, "chroot", rootfs, "/bin/sh", "-c", script)
	cmd.Env = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C"}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// stepGrubDefaults writes /etc/default/grub with kernel_cmdline when the
// image has none. It runs before the provisioners, so that they find the
// file they add to and the manifest they write records it: drift on the
// booted host then compares it with what was baked.
type stepGrubDefaults struct{}

func (s *stepGrubDefaults) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	root, err := os.OpenRoot(state.Get(stateRootfs).(string))
	if err != nil {
		return halt(state, err)
	}
	defer root.Close()
	if _, err := root.Lstat("etc/default/grub"); !errors.Is(err, os.ErrNotExist) {
		return multistep.ActionContinue
	}
	dist := map[string]string{"debian": "Debian", "ubuntu": "Ubuntu"}[c.Distribution]
	if err := writeRootFile(root, "etc/default/grub", fmt.Sprintf(defaultGrubFile, dist, c.KernelCmdline), 0o644); err != nil {
		return halt(state, err)
	}
	return multistep.ActionContinue
}

func (s *stepGrubDefaults) Cleanup(multistep.StateBag) {}
