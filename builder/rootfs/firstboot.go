package rootfs

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/gpuhost/gpuhost/builder/internal/firstboot"
)

// What a disk output leaves for its first boot, as cloud images do: every
// host booted from one image must get its own identity, and the root must
// fill whatever disk the image is written to.

// growRootUnit grows the root partition to the end of its disk and then the
// file system to the partition, at every boot (both do nothing when there
// is nothing to grow), so that a disk enlarged later grows on its next boot
// too. It runs before local-fs.target: what starts later sees the full size.
const growRootUnit = `# Written by the gpuhost-rootfs builder: the image's root partition is
# smaller than the disks it is written to.
[Unit]
Description=Grow the root partition and file system to fill the disk
Documentation=man:systemd-repart(8) man:systemd-growfs(8)
DefaultDependencies=no
After=systemd-remount-fs.service
Before=local-fs.target shutdown.target
Conflicts=shutdown.target
ConditionVirtualization=!container

[Service]
Type=oneshot
RemainAfterExit=yes
ExecStart=/usr/bin/systemd-repart --dry-run=no
ExecStart=/usr/lib/systemd/systemd-growfs /

[Install]
WantedBy=local-fs.target
`

// repartRoot tells systemd-repart that the x-86-64 root partition may take
// the rest of the disk; it matches the disk's root by its type.
const repartRoot = `# Written by the gpuhost-rootfs builder: grow the root to the end of the disk.
[Partition]
Type=root
`

// stepFirstBoot prepares the rootfs of a disk for its first boot: an empty
// /etc/machine-id (systemd makes one at boot), no SSH host keys (made
// before sshd starts), and the units that grow the root.
type stepFirstBoot struct{}

func (s *stepFirstBoot) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	ui := state.Get(stateUI).(packersdk.Ui)
	root, err := os.OpenRoot(state.Get(stateRootfs).(string))
	if err != nil {
		return halt(state, err)
	}
	defer root.Close()
	if err := prepareFirstBoot(root, ui); err != nil {
		return halt(state, err)
	}
	return multistep.ActionContinue
}

func (s *stepFirstBoot) Cleanup(multistep.StateBag) {}

// prepareFirstBoot does the work of stepFirstBoot under root.
func prepareFirstBoot(root *os.Root, ui packersdk.Ui) error {
	// Empty rather than absent: systemd then mounts a generated id over it
	// until the root is writable, and writes it on first boot.
	if err := writeRootFile(root, "etc/machine-id", "", 0o444); err != nil {
		return err
	}
	// dbus keeps a copy; a link to /etc/machine-id is what Debian makes.
	if fi, err := root.Lstat("var/lib/dbus/machine-id"); err == nil && fi.Mode().IsRegular() {
		if err := root.Remove("var/lib/dbus/machine-id"); err != nil {
			return fmt.Errorf("removing /var/lib/dbus/machine-id: %w", err)
		}
		if err := root.Symlink("/etc/machine-id", "var/lib/dbus/machine-id"); err != nil {
			return fmt.Errorf("linking /var/lib/dbus/machine-id: %w", err)
		}
	}

	removed, err := removeSSHHostKeys(root)
	if err != nil {
		return err
	}
	if len(removed) > 0 {
		ui.Message("Removed the SSH host keys " + strings.Join(removed, ", ") + ": each host makes its own at first boot")
	}
	if _, err := root.Lstat("usr/sbin/sshd"); err == nil {
		if err := installUnit(root, firstboot.SSHHostKeysUnitName, firstboot.SSHHostKeysUnit, "ssh.service.wants"); err != nil {
			return err
		}
	}

	if _, err := root.Lstat("usr/bin/systemd-repart"); err != nil {
		ui.Error("The image has no systemd-repart: its root partition will not grow at first boot")
		return nil
	}
	if err := writeRootFile(root, "etc/repart.d/50-gpuhost-root.conf", repartRoot, 0o644); err != nil {
		return err
	}
	return installUnit(root, "gpuhost-growroot.service", growRootUnit, "local-fs.target.wants")
}

// removeSSHHostKeys removes /etc/ssh/ssh_host_*_key and their .pub halves,
// returning the names removed.
func removeSSHHostKeys(root *os.Root) ([]string, error) {
	entries, err := fs.ReadDir(root.FS(), "etc/ssh")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading /etc/ssh: %w", err)
	}
	var removed []string
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, "ssh_host_") && (strings.HasSuffix(n, "_key") || strings.HasSuffix(n, "_key.pub")) {
			if err := root.Remove(path.Join("etc/ssh", n)); err != nil {
				return nil, fmt.Errorf("removing /etc/ssh/%s: %w", n, err)
			}
			removed = append(removed, "/etc/ssh/"+n)
		}
	}
	return removed, nil
}

// installUnit writes a unit into /etc/systemd/system and enables it with
// the link systemctl enable would make in wantsDir.
func installUnit(root *os.Root, name, body, wantsDir string) error {
	unit := path.Join("etc/systemd/system", name)
	if err := writeRootFile(root, unit, body, 0o644); err != nil {
		return err
	}
	dir := path.Join("etc/systemd/system", wantsDir)
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("enabling %s: %w", name, err)
	}
	link := path.Join(dir, name)
	if err := root.Remove(link); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("enabling %s: %w", name, err)
	}
	if err := root.Symlink("/"+unit, link); err != nil {
		return fmt.Errorf("enabling %s: %w", name, err)
	}
	return nil
}
