package ssh

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/daemon"
	"github.com/gpuhost/gpuhost/facts/collect/textfile"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// maxHostKeyFile bounds a public host key file.
const maxHostKeyFile = 64 << 10

// defaultSSHHostKeys are the keys sshd loads when no HostKey is set.
var defaultSSHHostKeys = []string{
	"/etc/ssh/ssh_host_rsa_key", "/etc/ssh/ssh_host_ecdsa_key", "/etc/ssh/ssh_host_ed25519_key",
}

// sshListener is one listening socket of a daemon: the address the kernel
// reports and the address to dial it at.
type sshListener struct{ listen, dial string }

// liveSSHDaemons describes every sshd that owns a listening socket: the
// configuration its command line names, whether that changed since the
// daemon loaded it, and what each listener offers and accepts.
func liveSSHDaemons(ctx context.Context, env *collect.Env, network *facts.Network, kex []string) ([]facts.SSHDaemon, error) {
	byPID := sshdListeners(network)
	pids := make([]int, 0, len(byPID))
	for pid := range byPID {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	timeout := cmp.Or(env.ProbeTimeout, 2*time.Second)
	var out []facts.SSHDaemon
	for _, pid := range pids {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		d, err := liveSSHDaemon(ctx, env.FS, pid, byPID[pid], timeout, kex)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// sshdListeners groups the TCP listeners owned by a process named sshd by
// its pid.
func sshdListeners(network *facts.Network) map[int][]sshListener {
	out := map[int][]sshListener{}
	if network == nil {
		return out
	}
	for _, l := range network.Listening {
		if l.Process != "sshd" || l.PID <= 0 || (l.Proto != "tcp" && l.Proto != "tcp6") {
			continue
		}
		addr, err := netip.ParseAddr(l.Address)
		if err != nil || l.Port <= 0 || l.Port > 65535 {
			continue
		}
		dial := addr
		switch addr {
		case netip.IPv4Unspecified():
			dial = netip.MustParseAddr("127.0.0.1")
		case netip.IPv6Unspecified():
			dial = netip.IPv6Loopback()
		}
		port := strconv.Itoa(l.Port)
		out[l.PID] = append(out[l.PID], sshListener{
			listen: net.JoinHostPort(addr.String(), port),
			dial:   net.JoinHostPort(dial.String(), port),
		})
	}
	return out
}

func liveSSHDaemon(ctx context.Context, fsys sysroot.FS, pid int, ls []sshListener, timeout time.Duration, kex []string) (facts.SSHDaemon, error) {
	argv, err := daemon.ReadCmdline(fsys, pid)
	if err != nil {
		return facts.SSHDaemon{}, err
	}
	name, opts, err := SSHDCommandLine(argv)
	if err != nil {
		return facts.SSHDaemon{}, fmt.Errorf("reading the command line of sshd pid %d: %w", pid, err)
	}
	if name, err = daemon.AbsoluteFor(fsys, pid, name); err != nil {
		return facts.SSHDaemon{}, err
	}
	cfg, err := LoadSSHDWith(fsys, name, opts)
	if err != nil {
		return facts.SSHDaemon{}, fmt.Errorf("reading the configuration of sshd pid %d: %w", pid, err)
	}
	cfg.KexDefaults = kex
	d := facts.SSHDaemon{SSHSettings: cfg.Settings(fsys.Display(name)), PID: pid, Source: "process", Listen: []string{}, Wire: []facts.SSHWire{}}
	var wireKeys []facts.SSHHostKey
	for _, l := range ls {
		d.Listen = append(d.Listen, l.listen)
		w := probeSSHWire(ctx, l.listen, l.dial, timeout)
		if w.Error == "" {
			probeSSHAuthMethods(ctx, &w, l.dial, timeout)
		}
		d.Wire = append(d.Wire, w)
		if wireKeys == nil && w.Error == "" {
			// Every listener of one daemon holds the same keys.
			wireKeys = probeSSHHostKeys(ctx, l.listen, l.dial, w.HostKeyAlgorithms, timeout)
		}
	}
	d.HostKeys = append(wireKeys, fileHostKeys(fsys, cfg)...)
	d.SSHDaemonAge = sshdAge(fsys, pid, cfg)
	return d, nil
}

// fileHostKeys reads the public half of each host key the configuration
// names (or of the default keys that exist), beside the private key as
// ssh-keygen writes it.
func fileHostKeys(fsys sysroot.FS, cfg *SSHDConfig) []facts.SSHHostKey {
	names := cfg.HostKeys
	explicit := len(names) > 0
	if !explicit {
		names = defaultSSHHostKeys
	}
	out := []facts.SSHHostKey{}
	for _, n := range names {
		n = path.Join("/", n)
		if !explicit && !textfile.Exists(fsys, n) {
			continue
		}
		hk := facts.SSHHostKey{Source: "file", File: fsys.Display(n)}
		if err := readHostKey(fsys, n+".pub", &hk); err != nil {
			hk.Error = err.Error()
		}
		out = append(out, hk)
	}
	return out
}

func readHostKey(fsys sysroot.FS, name string, hk *facts.SSHHostKey) error {
	data, err := fsys.ReadFileLimit(name, maxHostKeyFile)
	if err != nil {
		return fmt.Errorf("reading host key %s: %w", fsys.Display(name), err)
	}
	key, _, _, _, err := ssh.ParseAuthorizedKey(data)
	if err != nil {
		return fmt.Errorf("parsing host key %s: %w", fsys.Display(name), err)
	}
	describeHostKey(hk, key)
	return nil
}
