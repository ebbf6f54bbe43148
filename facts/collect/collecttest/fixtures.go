package collecttest

// Fixtures more than one domain's tests read: an Ubuntu GPU image and a
// live host, as trees for WriteTree.

// UbuntuDpkg is the dpkg database of UbuntuImage: held, multi-arch,
// removed and half-configured packages.
const UbuntuDpkg = `Package: systemd
Status: install ok installed
Priority: important
Architecture: amd64
Version: 249.11-0ubuntu3.12
Description: system and service manager
 systemd is a system and service manager for Linux.
 .
 It provides aggressive parallelization.

Package: nvidia-driver-535-server
Status: hold ok installed
Architecture: amd64
Version: 535.183.01-0ubuntu0.22.04.1

Package: libc6
Status: install ok installed
Architecture: i386
Version: 2.35-0ubuntu3.8

Package: libc6
Status: install ok installed
Architecture: amd64
Version: 2.35-0ubuntu3.8

Package: old-removed
Status: deinstall ok config-files
Architecture: amd64
Version: 1.0

Package: half
Status: install ok half-configured
Architecture: amd64
Version: 1.0
`

// UbuntuImage is a GPU image rootfs as the provisioner leaves it.
func UbuntuImage() map[string]any {
	return map[string]any{
		"usr/lib/os-release": `PRETTY_NAME="Ubuntu 22.04.4 LTS"
NAME="Ubuntu"
VERSION_ID="22.04"
VERSION="22.04.4 LTS (Jammy Jellyfish)"
VERSION_CODENAME=jammy
ID=ubuntu
ID_LIKE=debian
UBUNTU_CODENAME=jammy
`,
		"etc/os-release":                              Symlink("../usr/lib/os-release"),
		"etc/hostname":                                "gpu-node-01\n",
		"lib/modules/5.15.0-9-generic/":               nil,
		"lib/modules/5.15.0-105-generic/":             nil,
		"lib/modules/5.15.0-91-generic/":              nil,
		"lib/modules/not-a-dir":                       "x",
		"etc/default/grub":                            "GRUB_DEFAULT=0\nGRUB_TIMEOUT=0\nGRUB_DISTRIBUTOR=`lsb_release -i -s 2> /dev/null || echo Debian`\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet splash\"\nGRUB_CMDLINE_LINUX=\"\"\n",
		"etc/default/grub.d/50-cloudimg-settings.cfg": "# Cloud Image specific Grub settings\nGRUB_CMDLINE_LINUX_DEFAULT=\"console=tty1 console=ttyS0 nvme_core.io_timeout=4294967295\"\nGRUB_TIMEOUT=0\n",
		"etc/default/grub.d/60-gpuhost.cfg":           "GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX systemd.unified_cgroup_hierarchy=1\"\n",
		"var/lib/dpkg/status":                         UbuntuDpkg,
		"etc/crypttab":                                "# <target name> <source device> <key file> <options>\ncryptswap /dev/disk/by-partuuid/1234 /dev/urandom swap,cipher=aes-xts-plain64,size=256\ndata UUID=0d3c-77 none luks,discard\n",
		"etc/fstab":                                   "# /etc/fstab\nLABEL=cloudimg-rootfs\t/\text4\tdiscard,errors=remount-ro\t0 1\nLABEL=UEFI\t/boot/efi\tvfat\tumask=0077\t0 1\n/dev/mapper/cryptswap none swap sw 0 0\n/swap\\040file none swap sw 0 0\n",
		"etc/ufw/ufw.conf":                            "# /etc/ufw/ufw.conf\nENABLED=yes\nLOGLEVEL=low\n",
		"etc/default/ufw":                             "IPV6=yes\nDEFAULT_INPUT_POLICY=\"DROP\"\nDEFAULT_OUTPUT_POLICY=\"ACCEPT\"\n",
		"etc/ufw/user.rules": `*filter
:ufw-user-input - [0:0]
### RULES ###

### tuple ### allow tcp 22 0.0.0.0/0 any 0.0.0.0/0 in
-A ufw-user-input -p tcp --dport 22 -j ACCEPT

### tuple ### limit tcp 443 0.0.0.0/0 any 0.0.0.0/0 in
-A ufw-user-input -p tcp --dport 443 -j ufw-user-limit-accept

### tuple ### allow udp 6000:6002 0.0.0.0/0 any 0.0.0.0/0 in_eth0
### tuple ### deny tcp 25 0.0.0.0/0 any 0.0.0.0/0 in
-A ufw-user-input -p tcp --dport 25 -j DROP
### tuple ### allow any any 0.0.0.0/0 any 10.0.0.0/8 in
### tuple ### allow tcp 8080 0.0.0.0/0 any 0.0.0.0/0 out
COMMIT
`,
		"etc/ufw/user6.rules": "-A ufw6-user-input -p tcp -m multiport --dports 9100,9400 -j ACCEPT\n",
		"etc/systemd/system/multi-user.target.wants/nvidia-persistenced.service": Symlink("/lib/systemd/system/nvidia-persistenced.service"),
		"etc/systemd/system/multi-user.target.wants/ssh.service":                 Symlink("/lib/systemd/system/ssh.service"),
		"etc/systemd/system/timers.target.wants/gpuhost-agent.timer":             Symlink("/etc/systemd/system/gpuhost-agent.timer"),
		"etc/systemd/system/sockets.target.wants/README":                         "not a unit",
		"etc/systemd/system/unattended-upgrades.service":                         Symlink("/dev/null"),
		"etc/systemd/system/apt-daily.timer":                                     Symlink("/dev/null"),
		"etc/systemd/system/gpuhost-agent.timer":                                 "[Timer]\nOnCalendar=hourly\n",
		"etc/systemd/system/other.service":                                       Symlink("/lib/systemd/system/other.service"),
		"usr/lib/systemd/system/sysinit.target.wants/vendor.service":             Symlink("../vendor.service"),
		"etc/gpuhost/manifest.json":                                              `{"schema":"gpuhost.manifest/v1","pins":{"driver":"535.183.01"},"size":12345678901234567890}`,
	}
}

// ProcTCP, ProcTCP6 and ProcUDP are LiveHost's socket tables: listeners,
// an established connection and a duplicate.
const ProcTCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 21001 1 0000000000000000 100 0 0 10 0
   1: 0100007F:0277 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 21002 1 0000000000000000 100 0 0 10 0
   2: 0F02000A:0016 0202000A:C350 01 00000000:00000000 02:000A7C8D 00000000     0        0 21003 4 0000000000000000 20 4 30 10 -1
   3: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 21001 1 0000000000000000 100 0 0 10 0
`

// ProcTCP6 is LiveHost's /proc/net/tcp6.
const ProcTCP6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:01BB 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 22001 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000001000000:0CEA 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000   112        0 22002 1 0000000000000000 100 0 0 10 0
   2: 0000000000000000FFFF00000100007F:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 0 1 0000000000000000 100 0 0 10 0
`

// ProcUDP is LiveHost's /proc/net/udp.
const ProcUDP = `   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  301: 3500007F:0035 00000000:0000 07 00000000:00000000 00:00000000 00000000   101        0 23001 2 0000000000000000 0
  302: 0F02000A:0044 0102000A:0043 01 00000000:00000000 00:00000000 00000000   101        0 23002 2 0000000000000000 0
`

// LiveHost is a fake host: root on LVM on LUKS2 on vda3, an encrypted swap
// device, a zram swap, cgroup v2, sshd, nginx and resolved listening.
func LiveHost() map[string]any {
	return map[string]any{
		"etc/os-release":                "ID=ubuntu\nVERSION_ID=\"24.04\"\nVERSION_CODENAME=noble\nPRETTY_NAME=\"Ubuntu 24.04 LTS\"\n",
		"etc/hostname":                  "configured-name\n",
		"proc/sys/kernel/hostname":      "running-name\n",
		"proc/sys/kernel/osrelease":     "6.8.0-45-generic\n",
		"proc/cmdline":                  "BOOT_IMAGE=/vmlinuz-6.8.0-45-generic root=/dev/mapper/vg-root ro quiet \"acpi_osi=Windows 2020\" systemd.unified_cgroup_hierarchy=1\n",
		"lib/modules/6.8.0-45-generic/": nil,
		"proc/net/tcp":                  ProcTCP,
		"proc/net/tcp6":                 ProcTCP6,
		"proc/net/udp":                  ProcUDP,
		"proc/1/comm":                   "systemd\n",
		"proc/1/fd/0":                   Symlink("/dev/null"),
		"proc/812/comm":                 "sshd\n",
		"proc/812/fd/3":                 Symlink("socket:[21001]"),
		"proc/812/fd/4":                 Symlink("pipe:[999]"),
		"proc/1200/comm":                "nginx\n",
		"proc/1200/fd/6":                Symlink("socket:[22001]"),
		"proc/1201/comm":                "nginx\n",
		"proc/1201/fd/6":                Symlink("socket:[22001]"),
		"proc/640/comm":                 "systemd-resolve\n",
		"proc/640/fd/12":                Symlink("socket:[23001]"),
		"proc/self/mountinfo": "22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n" +
			"1 0 253:1 / / rw,relatime shared:1 - ext4 /dev/mapper/vg-root rw\n" +
			"30 1 252:2 / /boot rw,relatime shared:30 - ext4 /dev/vda2 rw\n" +
			"31 1 0:45 / /mnt/my\\040data rw - tmpfs tmpfs rw\n",
		"proc/swaps": "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n" +
			"/dev/dm-2                               partition\t999420\t\t0\t\t-2\n" +
			"/dev/zram0                              partition\t8388604\t\t0\t\t100\n" +
			"/swap.img                               file\t\t2097148\t\t0\t\t-3\n",
		"sys/devices/virtual/block/dm-1/uevent":                       "MAJOR=253\nMINOR=1\nDEVNAME=dm-1\nDEVTYPE=disk\n",
		"sys/devices/virtual/block/dm-1/dm/uuid":                      "LVM-abcdef0123456789\n",
		"sys/devices/virtual/block/dm-1/dm/name":                      "vg-root\n",
		"sys/devices/virtual/block/dm-0/dm/name":                      "dm_crypt-0\n",
		"sys/devices/virtual/block/dm-0/slaves/vda3/partition":        "3\n",
		"sys/devices/virtual/block/dm-1/slaves/dm-0":                  Symlink("../../dm-0"),
		"sys/devices/virtual/block/dm-0/uevent":                       "MAJOR=253\nMINOR=0\nDEVNAME=dm-0\n",
		"sys/devices/virtual/block/dm-0/dm/uuid":                      "CRYPT-LUKS2-0123456789abcdef0123456789abcdef-dm_crypt-0\n",
		"sys/devices/virtual/block/dm-2/dm/uuid":                      "CRYPT-PLAIN-cryptswap\n",
		"sys/devices/virtual/block/dm-2/dm/name":                      "cryptswap\n",
		"sys/dev/block/253:1":                                         Symlink("../../devices/virtual/block/dm-1"),
		"sys/class/block/dm-2":                                        Symlink("../../devices/virtual/block/dm-2"),
		"sys/fs/cgroup/cgroup.controllers":                            "cpuset cpu io memory pids\n",
		"sys/fs/cgroup/cgroup.subtree_control":                        "cpu io memory pids\n",
		"sys/fs/cgroup/system.slice/memory.max":                       "max\n",
		"sys/fs/cgroup/system.slice/memory.high":                      "max\n",
		"etc/nftables.conf":                                           "#!/usr/sbin/nft -f\nflush ruleset\ninclude \"/etc/nftables.d/*.nft\"\n",
		"etc/nftables.d/10-input.nft":                                 "define SSH = 22\ntable inet filter {\n\tchain input {\n\t\ttype filter hook input priority filter; policy drop;\n\t\tct state established,related accept\n\t\tiif lo accept\n\t\ttcp dport $SSH accept\n\t\ttcp dport { 80,\n\t\t\t443 } accept\n\t}\n}\n",
		"etc/systemd/system/multi-user.target.wants/nftables.service": Symlink("/lib/systemd/system/nftables.service"),
		"run/systemd/system/runtime-masked.service":                   Symlink("/dev/null"),
	}
}
