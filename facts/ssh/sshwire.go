package ssh

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/rsa"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/textfile"
)

const (
	// maxSSHPacket is the largest packet RFC 4253 section 6.1 says an
	// implementation must accept; nothing larger is read.
	maxSSHPacket = 35000
	// maxSSHLine bounds the version line (255 bytes with CR LF, RFC 4253
	// section 4.2) and every line a server may send before it.
	maxSSHLine = 255
	// maxSSHPreamble bounds the lines a server may send before its version.
	maxSSHPreamble = 32
	// sshMsgKexinit is SSH_MSG_KEXINIT.
	sshMsgKexinit = 20
	// sshProbeVersion is what the probe says it is.
	sshProbeVersion = "SSH-2.0-gpuhost_probe"
	// sshProbeUser is the user the probes name: no host has it, so no
	// request of theirs can log anyone in.
	sshProbeUser = "gpuhost-probe"
	// maxAuthMethods bounds the method names kept from one answer.
	maxAuthMethods = 32
)

// KEXINIT holds the name-lists of an SSH_MSG_KEXINIT payload, in the order
// RFC 4253 section 7.1 gives them.
type KEXINIT struct {
	KexAlgorithms       []string
	HostKeyAlgorithms   []string
	CiphersClientServer []string
	CiphersServerClient []string
	MACsClientServer    []string
	MACsServerClient    []string
	CompressionCS       []string
	CompressionSC       []string
	LanguagesCS         []string
	LanguagesSC         []string
	FirstKexFollows     bool
}

// ParseKEXINIT parses an SSH_MSG_KEXINIT payload: the message number, a
// 16-byte cookie, ten name-lists, a boolean and a reserved uint32.
func ParseKEXINIT(payload []byte) (*KEXINIT, error) {
	if len(payload) > maxSSHPacket {
		return nil, fmt.Errorf("KEXINIT of %d bytes is longer than %d", len(payload), maxSSHPacket)
	}
	if len(payload) < 17 || payload[0] != sshMsgKexinit {
		return nil, errors.New("not an SSH_MSG_KEXINIT")
	}
	rest := payload[17:]
	k := &KEXINIT{}
	for i, dst := range []*[]string{
		&k.KexAlgorithms, &k.HostKeyAlgorithms, &k.CiphersClientServer, &k.CiphersServerClient,
		&k.MACsClientServer, &k.MACsServerClient, &k.CompressionCS, &k.CompressionSC,
		&k.LanguagesCS, &k.LanguagesSC,
	} {
		list, tail, err := nameList(rest)
		if err != nil {
			return nil, fmt.Errorf("KEXINIT name-list %d: %w", i+1, err)
		}
		*dst, rest = list, tail
	}
	if len(rest) < 5 {
		return nil, errors.New("KEXINIT ends before first_kex_packet_follows")
	}
	k.FirstKexFollows = rest[0] != 0
	return k, nil
}

// nameList reads one RFC 4251 name-list: a uint32 length and that many
// bytes of comma-separated US-ASCII names.
func nameList(b []byte) ([]string, []byte, error) {
	if len(b) < 4 {
		return nil, nil, errors.New("truncated length")
	}
	n := binary.BigEndian.Uint32(b)
	b = b[4:]
	if uint64(n) > uint64(len(b)) {
		return nil, nil, fmt.Errorf("length %d runs past the packet", n)
	}
	text := b[:n]
	for _, c := range text {
		if c <= ' ' || c >= 0x7f {
			return nil, nil, fmt.Errorf("byte %#x in a name", c)
		}
	}
	names := []string{}
	if n > 0 {
		names = strings.Split(string(text), ",")
		if slices.Contains(names, "") {
			return nil, nil, errors.New("empty name")
		}
	}
	return names, b[n:], nil
}

// ReadSSHVersion reads the server's identification line, skipping the
// other lines RFC 4253 lets a server send first.
func ReadSSHVersion(r *bufio.Reader) (string, error) {
	for range maxSSHPreamble {
		line, err := readSSHLine(r)
		if err != nil {
			return "", err
		}
		if strings.HasPrefix(line, "SSH-") {
			if !strings.HasPrefix(line, "SSH-2.0-") && !strings.HasPrefix(line, "SSH-1.99-") {
				return "", fmt.Errorf("server speaks %q, not SSH 2.0", line)
			}
			return line, nil
		}
	}
	return "", fmt.Errorf("no version line in the first %d lines", maxSSHPreamble)
}

func readSSHLine(r *bufio.Reader) (string, error) {
	var b []byte
	for {
		c, err := r.ReadByte()
		if err != nil {
			return "", err
		}
		if c == '\n' {
			break
		}
		if len(b) >= maxSSHLine {
			return "", fmt.Errorf("line longer than %d bytes", maxSSHLine)
		}
		b = append(b, c)
	}
	line := strings.TrimSuffix(string(b), "\r")
	if textfile.CheckText([]byte(line)) != nil {
		return "", errors.New("version line is not text")
	}
	return line, nil
}

// ReadKEXINIT reads one unencrypted binary packet (RFC 4253 section 6) and
// parses it as the server's KEXINIT.
func ReadKEXINIT(r io.Reader) (*KEXINIT, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	length := binary.BigEndian.Uint32(hdr[:4])
	padding := uint32(hdr[4])
	if length < 2 || length > maxSSHPacket {
		return nil, fmt.Errorf("packet length %d outside 2..%d", length, maxSSHPacket)
	}
	if padding >= length-1 {
		return nil, fmt.Errorf("padding %d leaves no payload in a packet of %d", padding, length)
	}
	body := make([]byte, length-1)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	return ParseKEXINIT(body[:length-1-padding])
}

// probeSSHWire connects to addr, exchanges versions and reads the server's
// KEXINIT, all within timeout. listen names the listener in the facts.
func probeSSHWire(ctx context.Context, listen, addr string, timeout time.Duration) facts.SSHWire {
	w := facts.SSHWire{Address: listen, Source: "wire"}
	version, k, err := readServerKEXINIT(ctx, addr, timeout)
	if err != nil {
		w.Error = fmt.Sprintf("reading KEXINIT from %s: %v", addr, err)
		return w
	}
	w.Version = version
	w.KexAlgorithms = withoutPseudoAlgorithms(k.KexAlgorithms)
	w.HostKeyAlgorithms = k.HostKeyAlgorithms
	w.Ciphers = union(k.CiphersClientServer, k.CiphersServerClient)
	w.MACs = union(k.MACsClientServer, k.MACsServerClient)
	return w
}

func readServerKEXINIT(ctx context.Context, addr string, timeout time.Duration) (string, *KEXINIT, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return "", nil, err
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	if err := conn.SetDeadline(deadline); err != nil {
		return "", nil, err
	}
	if _, err := io.WriteString(conn, sshProbeVersion+"\r\n"); err != nil {
		return "", nil, err
	}
	r := bufio.NewReaderSize(conn, 4096)
	version, err := ReadSSHVersion(r)
	if err != nil {
		return "", nil, err
	}
	k, err := ReadKEXINIT(r)
	return version, k, err
}

// withoutPseudoAlgorithms drops the names that signal extensions rather
// than offer a key exchange (RFC 8308 ext-info, OpenSSH's strict KEX).
func withoutPseudoAlgorithms(names []string) []string {
	out := []string{}
	for _, n := range names {
		if strings.HasPrefix(n, "ext-info-") || strings.HasPrefix(n, "kex-strict-") {
			continue
		}
		out = append(out, n)
	}
	return out
}

func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, s := range b {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// hostKeyFamily maps a host key algorithm to the key type it signs with,
// so that one handshake per key type fetches every key the daemon holds.
func hostKeyFamily(alg string) string {
	switch {
	case strings.Contains(alg, "-cert-"):
		return ""
	case alg == "rsa-sha2-512", alg == "rsa-sha2-256", alg == "ssh-rsa":
		return ssh.KeyAlgoRSA
	}
	return alg
}

// errHostKeySeen stops a handshake once the server has shown its key.
var errHostKeySeen = errors.New("host key seen")

// probeSSHHostKeys fetches each host key the daemon offers, one handshake
// per key type, stopping each at the server's signature so no login is
// tried.
func probeSSHHostKeys(ctx context.Context, listen, addr string, algs []string, timeout time.Duration) []facts.SSHHostKey {
	out := []facts.SSHHostKey{}
	seen := map[string]bool{}
	for _, alg := range algs {
		fam := hostKeyFamily(alg)
		if fam == "" || seen[fam] {
			continue
		}
		seen[fam] = true
		hk := facts.SSHHostKey{Type: fam, Source: "wire", Address: listen}
		key, err := fetchHostKey(ctx, addr, alg, timeout)
		if err != nil {
			hk.Error = fmt.Sprintf("fetching the %s host key from %s: %v", alg, addr, err)
		} else {
			describeHostKey(&hk, key)
		}
		out = append(out, hk)
	}
	return out
}

// dialBounded connects to addr with ctx's deadline on the connection too,
// so a server that accepts and then stalls cannot outlast the probe.
func dialBounded(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	deadline, _ := ctx.Deadline()
	if err := conn.SetDeadline(deadline); err != nil {
		conn.Close()
		return nil, err
	}
	return conn, nil
}

func fetchHostKey(ctx context.Context, addr, alg string, timeout time.Duration) (ssh.PublicKey, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := dialBounded(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var key ssh.PublicKey
	supported, insecure := ssh.SupportedAlgorithms(), ssh.InsecureAlgorithms()
	cfg := &ssh.ClientConfig{
		User:              sshProbeUser,
		ClientVersion:     sshProbeVersion,
		HostKeyAlgorithms: []string{alg},
		HostKeyCallback: func(_ string, _ net.Addr, k ssh.PublicKey) error {
			key = k
			return errHostKeySeen
		},
		Config: ssh.Config{
			KeyExchanges: slices.Concat(supported.KeyExchanges, insecure.KeyExchanges),
			Ciphers:      slices.Concat(supported.Ciphers, insecure.Ciphers),
			MACs:         slices.Concat(supported.MACs, insecure.MACs),
		},
	}
	_, _, _, err = ssh.NewClientConn(conn, addr, cfg)
	if key != nil {
		return key, nil
	}
	if err == nil {
		return nil, errors.New("handshake ended without a host key")
	}
	return nil, err
}

// errAuthMethodsSeen stops the login once the server has listed the
// methods it accepts.
var errAuthMethodsSeen = errors.New("authentication methods seen")

// probeSSHAuthMethods fills w's AuthMethods: after a key exchange it sends
// a "none" userauth request, whose failure lists the methods the running
// daemon lets a client go on with, and stops there without trying any.
func probeSSHAuthMethods(ctx context.Context, w *facts.SSHWire, addr string, timeout time.Duration) {
	methods, err := readAuthMethods(ctx, addr, timeout)
	if err != nil {
		w.AuthError = fmt.Sprintf("asking %s for its authentication methods: %v", addr, err)
		return
	}
	w.AuthMethods = methods
}

func readAuthMethods(ctx context.Context, addr string, timeout time.Duration) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	conn, err := dialBounded(ctx, addr)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	var methods []string
	asked := false
	supported, insecure := ssh.SupportedAlgorithms(), ssh.InsecureAlgorithms()
	cfg := &ssh.ClientConfig{
		User:          sshProbeUser,
		ClientVersion: sshProbeVersion,
		// The host key is not what this probe judges: probeSSHHostKeys reads
		// it, and no secret is sent that a stranger's key could catch.
		HostKeyCallback:   ssh.InsecureIgnoreHostKey(),
		HostKeyAlgorithms: slices.Concat(supported.HostKeys, insecure.HostKeys),
		Config: ssh.Config{
			KeyExchanges: slices.Concat(supported.KeyExchanges, insecure.KeyExchanges),
			Ciphers:      slices.Concat(supported.Ciphers, insecure.Ciphers),
			MACs:         slices.Concat(supported.MACs, insecure.MACs),
		},
		// The client always asks "none" first; the callback runs on its
		// failure with the methods the server listed.
		AuthCallback: func(c *ssh.ClientAuthContext) (ssh.AuthMethod, error) {
			asked = true
			methods = authMethodNames(c.AllowedMethods)
			return nil, errAuthMethodsSeen
		},
	}
	c, chans, reqs, err := ssh.NewClientConn(conn, addr, cfg)
	if err == nil {
		// The server let a stranger in without asking anything.
		go ssh.DiscardRequests(reqs)
		go func() {
			for ch := range chans {
				_ = ch.Reject(ssh.Prohibited, "probe")
			}
		}()
		c.Close()
		return []string{"none"}, nil
	}
	if asked {
		return methods, nil
	}
	return nil, err
}

// authMethodNames keeps the names of a server's method list that are
// plain tokens, within the bound, in its order.
func authMethodNames(list []string) []string {
	out := []string{}
	for _, m := range list {
		if len(out) == maxAuthMethods {
			break
		}
		if m == "" || len(m) > 64 || strings.ContainsFunc(m, func(r rune) bool { return r <= ' ' || r >= 0x7f }) || slices.Contains(out, m) {
			continue
		}
		out = append(out, m)
	}
	return out
}

// describeHostKey fills a host key's type, size and fingerprint.
func describeHostKey(hk *facts.SSHHostKey, key ssh.PublicKey) {
	hk.Type = key.Type()
	hk.Fingerprint = ssh.FingerprintSHA256(key)
	ck, ok := key.(ssh.CryptoPublicKey)
	if !ok {
		return
	}
	switch k := ck.CryptoPublicKey().(type) {
	case *rsa.PublicKey:
		hk.Bits = k.N.BitLen()
	case *ecdsa.PublicKey:
		hk.Bits = k.Curve.Params().BitSize
	default:
		if hk.Type == ssh.KeyAlgoED25519 {
			hk.Bits = 256
		}
	}
}
