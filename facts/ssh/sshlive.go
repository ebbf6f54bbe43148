package ssh

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"net/netip"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
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
	byPID := listenersOf(network, func(process string) bool { return process == "sshd" })
	timeout := cmp.Or(env.ProbeTimeout, 2*time.Second)
	// An sshd under another name (a renamed binary) or behind a socket
	// another process owns (socket activation) answers with OpenSSH's
	// banner all the same.
	behind := opensshBehind(ctx, listenersOf(network, func(process string) bool { return process != "sshd" }), min(timeout, bannerWait))
	maps.Copy(byPID, behind)
	pids := make([]int, 0, len(byPID))
	for pid := range byPID {
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	var out []facts.SSHDaemon
	for _, pid := range pids {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		_, other := behind[pid]
		d, err := liveSSHDaemon(ctx, env.FS, pid, byPID[pid], timeout, kex, other)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// listenersOf groups by pid the TCP listeners owned by a process whose
// name is chosen.
func listenersOf(network *facts.Network, chosen func(process string) bool) map[int][]sshListener {
	out := map[int][]sshListener{}
	if network == nil {
		return out
	}
	for _, l := range network.Listening {
		if !chosen(l.Process) || l.PID <= 0 || (l.Proto != "tcp" && l.Proto != "tcp6") {
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

// maxBannerProbes bounds the listeners of other processes asked for an
// SSH banner at once, and bannerWait how long each may take: OpenSSH
// greets at once, and a service that waits for its client is asked no
// longer than that.
const (
	maxBannerProbes = 8
	bannerWait      = time.Second
)

// opensshBehind asks each listener for its banner, several at once, and
// keeps those whose banner is OpenSSH's, by pid.
func opensshBehind(ctx context.Context, byPID map[int][]sshListener, timeout time.Duration) map[int][]sshListener {
	out := map[int][]sshListener{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, maxBannerProbes)
	for pid, ls := range byPID {
		for _, l := range ls {
			wg.Go(func() {
				select {
				case sem <- struct{}{}:
				case <-ctx.Done():
					return
				}
				defer func() { <-sem }()
				if !opensshBanner(ctx, l.dial, timeout) {
					return
				}
				mu.Lock()
				out[pid] = append(out[pid], l)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	for pid := range out {
		slices.SortFunc(out[pid], func(a, b sshListener) int { return strings.Compare(a.listen, b.listen) })
	}
	return out
}

// opensshBanner says whether the server at addr greets with OpenSSH's
// identification string.
func opensshBanner(ctx context.Context, addr string, timeout time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return false
	}
	defer conn.Close()
	if d, ok := ctx.Deadline(); ok {
		_ = conn.SetReadDeadline(d)
	}
	b := make([]byte, len(opensshID))
	_, err = io.ReadFull(conn, b)
	return err == nil && string(b) == opensshID
}

// opensshID is how every OpenSSH server's identification string begins.
const opensshID = "SSH-2.0-OpenSSH_"

// sshdArgv finds sshd's own command line in that of the process owning a
// listener that answers as OpenSSH: a socket-activating wrapper's argument
// list carries it ("systemd-socket-activate --inetd ... /usr/sbin/sshd -i
// -f FILE"), systemd itself none (its ssh@.service runs sshd -i with the
// default configuration), and a renamed sshd is its own.
func sshdArgv(argv []string) (sshd []string, socket bool) {
	if len(argv) == 1 {
		// sshd names its listener "PROGNAME: ARGV [listener] ...", and a
		// renamed one by its own name, which daemon.SplitCmdline does not
		// know.
		if _, rest, ok := strings.Cut(argv[0], ": "); ok {
			if title, _, ok := strings.Cut(rest, " [listener]"); ok {
				return strings.Fields(title), false
			}
		}
	}
	for i, a := range argv {
		if path.Base(a) == "sshd" {
			return argv[i:], i > 0
		}
	}
	if len(argv) > 0 && (path.Base(argv[0]) == "systemd" || path.Base(argv[0]) == "init") {
		return []string{"sshd"}, true
	}
	return argv, false
}

func liveSSHDaemon(ctx context.Context, fsys sysroot.FS, pid int, ls []sshListener, timeout time.Duration, kex []string, other bool) (facts.SSHDaemon, error) {
	argv, err := daemon.ReadCmdline(fsys, pid)
	if err != nil {
		return facts.SSHDaemon{}, err
	}
	socket := false
	if other {
		argv, socket = sshdArgv(argv)
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
	if socket {
		// Each connection starts an sshd that reads the file anew: the
		// socket's owner is no daemon that could run an older one.
		d.Source = "socket"
	}
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
	if !socket {
		d.SSHDaemonAge = sshdAge(fsys, pid, cfg)
	}
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
