package system

import (
	"strconv"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/checks/facts"
)

const procTCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 21001 1 0000000000000000 100 0 0 10 0
   1: 0100007F:0277 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 21002 1 0000000000000000 100 0 0 10 0
   2: 0F02000A:0016 0202000A:C350 01 00000000:00000000 02:000A7C8D 00000000     0        0 21003 4 0000000000000000 20 4 30 10 -1
   3: 00000000:0016 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 21001 1 0000000000000000 100 0 0 10 0
`

const procTCP6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:01BB 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 22001 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000001000000:0CEA 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000   112        0 22002 1 0000000000000000 100 0 0 10 0
   2: 0000000000000000FFFF00000100007F:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 0 1 0000000000000000 100 0 0 10 0
`

const procUDP = `   sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode ref pointer drops
  301: 3500007F:0035 00000000:0000 07 00000000:00000000 00:00000000 00000000   101        0 23001 2 0000000000000000 0
  302: 0F02000A:0044 0102000A:0043 01 00000000:00000000 00:00000000 00000000   101        0 23002 2 0000000000000000 0
`

// liveHost is a fake host: root on LVM on LUKS2 on vda3, an encrypted swap
// device, a zram swap, cgroup v2, sshd, nginx and resolved listening.
func liveHost() map[string]any {
	return map[string]any{
		"etc/os-release":                "ID=ubuntu\nVERSION_ID=\"24.04\"\nVERSION_CODENAME=noble\nPRETTY_NAME=\"Ubuntu 24.04 LTS\"\n",
		"etc/hostname":                  "configured-name\n",
		"proc/sys/kernel/hostname":      "running-name\n",
		"proc/sys/kernel/osrelease":     "6.8.0-45-generic\n",
		"proc/cmdline":                  "BOOT_IMAGE=/vmlinuz-6.8.0-45-generic root=/dev/mapper/vg-root ro quiet \"acpi_osi=Windows 2020\" systemd.unified_cgroup_hierarchy=1\n",
		"lib/modules/6.8.0-45-generic/": nil,
		"proc/net/tcp":                  procTCP,
		"proc/net/tcp6":                 procTCP6,
		"proc/net/udp":                  procUDP,
		"proc/1/comm":                   "systemd\n",
		"proc/1/fd/0":                   symlink("/dev/null"),
		"proc/812/comm":                 "sshd\n",
		"proc/812/fd/3":                 symlink("socket:[21001]"),
		"proc/812/fd/4":                 symlink("pipe:[999]"),
		"proc/1200/comm":                "nginx\n",
		"proc/1200/fd/6":                symlink("socket:[22001]"),
		"proc/1201/comm":                "nginx\n",
		"proc/1201/fd/6":                symlink("socket:[22001]"),
		"proc/640/comm":                 "systemd-resolve\n",
		"proc/640/fd/12":                symlink("socket:[23001]"),
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
		"sys/devices/virtual/block/dm-1/slaves/dm-0":                  symlink("../../dm-0"),
		"sys/devices/virtual/block/dm-0/uevent":                       "MAJOR=253\nMINOR=0\nDEVNAME=dm-0\n",
		"sys/devices/virtual/block/dm-0/dm/uuid":                      "CRYPT-LUKS2-0123456789abcdef0123456789abcdef-dm_crypt-0\n",
		"sys/devices/virtual/block/dm-2/dm/uuid":                      "CRYPT-PLAIN-cryptswap\n",
		"sys/devices/virtual/block/dm-2/dm/name":                      "cryptswap\n",
		"sys/dev/block/253:1":                                         symlink("../../devices/virtual/block/dm-1"),
		"sys/class/block/dm-2":                                        symlink("../../devices/virtual/block/dm-2"),
		"sys/fs/cgroup/cgroup.controllers":                            "cpuset cpu io memory pids\n",
		"sys/fs/cgroup/cgroup.subtree_control":                        "cpu io memory pids\n",
		"sys/fs/cgroup/system.slice/memory.max":                       "max\n",
		"sys/fs/cgroup/system.slice/memory.high":                      "max\n",
		"etc/nftables.conf":                                           "#!/usr/sbin/nft -f\nflush ruleset\ninclude \"/etc/nftables.d/*.nft\"\n",
		"etc/nftables.d/10-input.nft":                                 "define SSH = 22\ntable inet filter {\n\tchain input {\n\t\ttype filter hook input priority filter; policy drop;\n\t\tct state established,related accept\n\t\tiif lo accept\n\t\ttcp dport $SSH accept\n\t\ttcp dport { 80,\n\t\t\t443 } accept\n\t}\n}\n",
		"etc/systemd/system/multi-user.target.wants/nftables.service": symlink("/lib/systemd/system/nftables.service"),
		"run/systemd/system/runtime-masked.service":                   symlink("/dev/null"),
	}
}

func TestLiveHostGolden(t *testing.T) {
	dir := t.TempDir()
	writeTree(t, dir, liveHost())
	fakeDMTables(t, map[string]string{
		"dm_crypt-0": "0 2097152 crypt aes-xts-plain64 :64:logon:cryptsetup:0123-d0 0 252:3 32768 1 allow_discards\n",
		"cryptswap":  "0 1998848 crypt aes-xts-plain64 " + strings.Repeat("0", 64) + " 0 252:4 0\n",
	})
	env := newEnv(t, dir, true)
	f := newFacts(facts.KindHost)
	// tls_probe would dial the test machine's real ports; it has its own
	// test with in-process servers.
	collect(t, env, f, "os", "kernel", "packages", "cgroup", "encryption", "network", "firewall", "systemd", "manifest")
	for _, name := range []string{"os", "kernel", "cgroup", "encryption", "network", "firewall", "systemd"} {
		wantStatus(t, f, name, facts.StatusOK)
	}
	wantStatus(t, f, "packages", facts.StatusNotApplicable)
	wantStatus(t, f, "manifest", facts.StatusNotApplicable)

	if f.Target.Hostname != "running-name" {
		t.Errorf("live hostname %q, want the kernel's", f.Target.Hostname)
	}
	if got := strings.Join(f.Kernel.Cmdline, "|"); !strings.Contains(got, "|acpi_osi=Windows 2020|") {
		t.Errorf("cmdline split %q", got)
	}
	if f.Cgroup.Version != 2 {
		t.Errorf("cgroup %+v", f.Cgroup)
	}
	root := f.Encryption.Root
	if root == nil || !root.Encrypted || strings.Join(root.Chain, ",") != "dm-1,dm-0,vda3" || root.Device != "/dev/mapper/vg-root" {
		t.Errorf("root %+v, want encrypted through dm-1,dm-0,vda3", root)
	}
	wantSwap := []facts.Swap{
		{Device: "/dev/dm-2", Encrypted: true, Kind: "partition"},
		{Device: "/dev/zram0", Encrypted: false, Kind: "zram"},
		{Device: "/swap.img", Encrypted: true, Kind: "file"},
	}
	if len(f.Encryption.Swap) != len(wantSwap) {
		t.Fatalf("swap %+v", f.Encryption.Swap)
	}
	for i, s := range wantSwap {
		got := f.Encryption.Swap[i]
		if got.Device != s.Device || got.Encrypted != s.Encrypted || got.Kind != s.Kind {
			t.Errorf("swap[%d] = %+v, want %+v", i, f.Encryption.Swap[i], s)
		}
	}
	want := map[string]facts.Listener{
		"tcp 0.0.0.0:22":             {Proto: "tcp", Address: "0.0.0.0", Port: 22, Process: "sshd", PID: 812},
		"tcp 127.0.0.1:631":          {Proto: "tcp", Address: "127.0.0.1", Port: 631},
		"tcp6 :::443":                {Proto: "tcp6", Address: "::", Port: 443, Process: "nginx", PID: 1200},
		"tcp6 ::1:3306":              {Proto: "tcp6", Address: "::1", Port: 3306},
		"tcp6 ::ffff:127.0.0.1:8080": {Proto: "tcp6", Address: "::ffff:127.0.0.1", Port: 8080},
		"udp 127.0.0.53:53":          {Proto: "udp", Address: "127.0.0.53", Port: 53, Process: "systemd-resolve", PID: 640},
	}
	if len(f.Network.Listening) != len(want) {
		t.Errorf("listening %+v, want %d entries (established and duplicate sockets dropped)", f.Network.Listening, len(want))
	}
	for _, l := range f.Network.Listening {
		key := l.Proto + " " + l.Address + ":" + strconv.Itoa(l.Port)
		if want[key] != l {
			t.Errorf("listener %s = %+v, want %+v", key, l, want[key])
		}
	}
	fw := f.Network.Firewall
	if fw.Backend != "nftables" || fw.DefaultInputPolicy != "drop" || !equalInts(fw.AllowedPorts, []int{22, 80, 443}) {
		t.Errorf("firewall %+v", fw)
	}
	// The kernel of the fake host cannot be read: the configuration stands
	// in and says so, and a wants link alone does not make it enabled.
	if fw.Source != "file" || !strings.Contains(fw.KernelError, noNetNS) {
		t.Errorf("source %q, kernel error %q; want the file and why", fw.Source, fw.KernelError)
	}
	if fw.Enabled || fw.Unit == nil || fw.Unit.Name != "nftables.service" || fw.Unit.State != "unknown" {
		t.Errorf("enabled %v, unit %+v; want unknown, not enabled", fw.Enabled, fw.Unit)
	}
	if !contains(f.Systemd.Masked, "runtime-masked.service") {
		t.Errorf("masked %v lacks the runtime mask", f.Systemd.Masked)
	}
	golden(t, "live_host.json", f)
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
