package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/reports"
)

// asCLI makes the test binary run as gpuhost itself: the live-host test runs
// `gpuhost scan host` inside a network namespace, which only a process of
// its own can enter whole.
const asCLI = "GPUHOST_TEST_AS_CLI"

func TestMain(m *testing.M) {
	if os.Getenv(asCLI) == "1" {
		main()
	}
	os.Exit(m.Run())
}

// The live host lives in a network namespace of the test's own: loopback,
// and a veth pair whose both ends stay in the namespace, one on a
// documentation address (TEST-NET-1) that stands for the host's public side,
// so that nothing is reachable from outside and nothing outside is reached.
const (
	publicAddr  = "192.0.2.1"
	nginxPort   = 8443 // on loopback
	mtlsPort    = 9443 // TLS 1.2 with a client certificate demanded
	legacyPort  = 9444 // TLS 1.0 and 1.1 only
	expiredPort = 9445 // an expired certificate
	sshPort     = 2222
)

// liveHost is a namespace with daemons in it, all stopped by PID when the
// test ends.
type liveHost struct {
	ns  []string // "ip netns exec NAME"
	dir string
}

func newLiveHost(t *testing.T) *liveHost {
	t.Helper()
	testutil.Root(t)
	h := &liveHost{ns: testutil.Netns(t), dir: t.TempDir()}
	ip, name := h.ns[0], h.ns[3]
	for _, args := range [][]string{
		{"-n", name, "link", "add", "gh0", "type", "veth", "peer", "name", "gh1"},
		{"-n", name, "addr", "add", publicAddr + "/24", "dev", "gh0"},
		{"-n", name, "link", "set", "gh0", "up"},
		{"-n", name, "link", "set", "gh1", "up"},
	} {
		testutil.Run(t, 10*time.Second, ip, args...)
	}
	return h
}

// cmd runs argv inside the namespace.
func (h *liveHost) cmd(argv ...string) *exec.Cmd {
	return exec.Command(h.ns[0], append(slices.Clone(h.ns[1:]), argv...)...)
}

// listening waits until addr accepts inside the namespace, or the daemon
// exits.
func (h *liveHost) listening(t *testing.T, p *testutil.Proc, addr string) {
	t.Helper()
	p.WaitFor(t, 20*time.Second, "listener on "+addr, func() bool {
		return h.cmd("bash", "-c", "exec 3<>/dev/tcp/"+strings.Replace(addr, ":", "/", 1)).Run() == nil
	})
}

func (h *liveHost) nginx(t *testing.T, protocols string, cert, key string) string {
	t.Helper()
	nginx := testutil.Tool(t, "nginx", "nginx")
	dir := filepath.Join(h.dir, "nginx")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "nginx.conf")
	text := fmt.Sprintf("error_log stderr;\nevents {}\nhttp {\n\taccess_log off;\n%s\tserver {\n\t\tlisten 127.0.0.1:%d ssl;\n\t\tssl_certificate %s;\n\t\tssl_certificate_key %s;\n\t\tssl_protocols %s;\n\t}\n}\n",
		testutil.NginxTempPaths(dir), nginxPort, cert, key, protocols)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	p := testutil.Start(t, h.cmd(nginx, "-c", conf, "-e", "stderr", "-g", "daemon off; pid "+filepath.Join(dir, "nginx.pid")+";"))
	h.listening(t, p, fmt.Sprintf("127.0.0.1:%d", nginxPort))
	return conf
}

func (h *liveHost) sServer(t *testing.T, port int, cert, key string, args ...string) {
	t.Helper()
	openssl := testutil.Tool(t, "openssl", "openssl")
	argv := append([]string{openssl, "s_server", "-quiet", "-naccept", "1000", "-accept", fmt.Sprintf("%s:%d", publicAddr, port), "-cert", cert, "-key", key}, args...)
	p := testutil.Start(t, h.cmd(argv...))
	h.listening(t, p, fmt.Sprintf("%s:%d", publicAddr, port))
}

// sshd starts sshd with config (its host key written beside it) and a
// private /run, since Debian's sshd insists on /run/sshd.
func (h *liveHost) sshd(t *testing.T, config string) string {
	t.Helper()
	sshd := testutil.Tool(t, "sshd", "openssh-server")
	keygen := testutil.Tool(t, "ssh-keygen", "openssh-client")
	unshare := testutil.Tool(t, "unshare", "util-linux")
	dir := filepath.Join(h.dir, "ssh")
	run := filepath.Join(h.dir, "run")
	for _, d := range []string{dir, run} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Run(t, 30*time.Second, keygen, "-q", "-N", "", "-t", "ed25519", "-f", filepath.Join(dir, "host_ed25519"))
	conf := filepath.Join(dir, "sshd_config")
	if err := os.WriteFile(conf, []byte(fmt.Sprintf(config, publicAddr, sshPort, filepath.Join(dir, "host_ed25519"))), 0o600); err != nil {
		t.Fatal(err)
	}
	p := testutil.Start(t, h.cmd(append([]string{unshare}, testutil.PrivateRun(run, sshd, "-D", "-e", "-f", conf, "-o", "PidFile=none")...)...))
	p.WaitLine(t, 20*time.Second, fmt.Sprintf("Server listening on %s port %d", publicAddr, sshPort))
	return conf
}

// nft loads ruleset into the namespace's kernel: an input policy of drop,
// with the ports it admits in a named set that a jumped-to chain accepts.
func (h *liveHost) nft(t *testing.T, ports string) string {
	t.Helper()
	nft := testutil.Tool(t, "nft", "nftables")
	ruleset := fmt.Sprintf(`table inet filter {
	set services {
		type inet_service
		elements = { %s }
	}
	chain input {
		type filter hook input priority filter; policy drop;
		iif "lo" accept
		ct state established,related accept
		jump allowed
	}
	chain allowed {
		tcp dport @services accept
	}
}
`, ports)
	path := filepath.Join(h.dir, "nftables.conf")
	if err := os.WriteFile(path, []byte(ruleset), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := h.cmd(nft, "-f", path).CombinedOutput(); err != nil {
		t.Fatalf("nft -f: %v\n%s", err, out)
	}
	return path
}

// scan runs `gpuhost scan host` inside the namespace and returns its report
// by check id.
func (h *liveHost) scan(t *testing.T) (map[string]reports.Result, int) {
	t.Helper()
	params := filepath.Join(h.dir, "params.yaml")
	if err := os.WriteFile(params, []byte("allowed_ports: [22]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := h.cmd(exe, "scan", "host", "--format", "json", "--params", params, "--no-color")
	c.Env = append(os.Environ(), asCLI+"=1")
	var out, errOut bytes.Buffer
	c.Stdout, c.Stderr = &out, &errOut
	code := 0
	if err := c.Run(); err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("running gpuhost scan host: %v\n%s", err, errOut.String())
		}
		code = ee.ExitCode()
	}
	var rep reports.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("gpuhost scan host (exit %d) wrote no report: %v\nstderr: %s", code, err, errOut.String())
	}
	byID := map[string]reports.Result{}
	for _, r := range rep.Results {
		byID[r.ID] = r
	}
	return byID, code
}

const weakSSHD = `ListenAddress %s:%d
HostKey %s
PermitRootLogin no
PasswordAuthentication no
KbdInteractiveAuthentication no
Ciphers aes128-ctr,aes256-ctr,aes128-cbc
KexAlgorithms curve25519-sha256,diffie-hellman-group14-sha1
MACs hmac-sha2-256-etm@openssh.com,hmac-sha1

Match User x
	PasswordAuthentication yes
`

const hardenedSSHD = `ListenAddress %s:%d
HostKey %s
PermitRootLogin no
PasswordAuthentication no
KbdInteractiveAuthentication no
Ciphers chacha20-poly1305@openssh.com,aes256-gcm@openssh.com
KexAlgorithms sntrup761x25519-sha512@openssh.com,curve25519-sha256
MACs hmac-sha2-512-etm@openssh.com,hmac-sha2-256-etm@openssh.com
`

// liveChecks are the checks the live host's daemons decide; each names the
// listener, file and line, or rule, that fails it.
var liveChecks = []string{"GH-TLS-002", "GH-TLS-003", "GH-TLS-004", "GH-TLS-005", "GH-TLS-007", "GH-SSH-002", "GH-SSH-004", "GH-SSH-005", "GH-SSH-006", "GH-NET-003", "GH-NET-004"}

// TestLiveHostVerdicts builds a live host in a network namespace with the
// daemons a security review trips over and an nftables ruleset that admits
// their ports through a named set behind a jump, scans it with `gpuhost
// scan host` from inside, and expects each to fail its check naming what is
// at fault; then the same host, hardened, passes those checks.
func TestLiveHostVerdicts(t *testing.T) {
	ca := testutil.NewCA(t)
	sound := testutil.CertSpec{Key: "rsa2048", CA: ca, DNS: []string{"gpu-node"}, IPs: []net.IP{net.ParseIP(publicAddr), net.IPv4(127, 0, 0, 1)}}
	expired := sound
	expired.NotAfter = time.Now().Add(-48 * time.Hour)

	t.Run("weak", func(t *testing.T) {
		h := newLiveHost(t)
		cert, key, _ := testutil.WriteCert(t, t.TempDir(), sound)
		oldCert, oldKey, _ := testutil.WriteCert(t, t.TempDir(), expired)
		nginxConf := h.nginx(t, "TLSv1.2 TLSv1.3", cert, key)
		h.sServer(t, mtlsPort, cert, key, "-tls1_2", "-Verify", "1")
		h.sServer(t, legacyPort, cert, key, "-no_tls1_2", "-no_tls1_3", "-cipher", "DEFAULT@SECLEVEL=0")
		h.sServer(t, expiredPort, oldCert, oldKey, "-tls1_3")
		sshConf := h.sshd(t, weakSSHD)
		h.nft(t, fmt.Sprintf("%d, %d, %d, %d", mtlsPort, legacyPort, expiredPort, sshPort))

		res, code := h.scan(t)
		if code != 1 && code != 2 {
			t.Errorf("exit %d on a weak host, want 1 (or 2 where this machine's own facts cannot be read)", code)
		}
		mtls, legacy, old := fmt.Sprintf("%s:%d", publicAddr, mtlsPort), fmt.Sprintf("%s:%d", publicAddr, legacyPort), fmt.Sprintf("%s:%d", publicAddr, expiredPort)
		for id, want := range map[string][]string{
			"GH-TLS-002": {nginxConf + ":14", "TLSv1.2"},
			"GH-TLS-003": {mtls},
			"GH-TLS-004": {legacy},
			"GH-TLS-005": {old, "expired"},
			"GH-TLS-007": {fmt.Sprintf("127.0.0.1:%d", nginxPort), "loopback"},
			// The test's CA is in no bundle of this machine's, which the
			// live scan verifies against.
			"GH-TLS-008": {mtls + ": certificate 0 (CN=gpuhost test peer) was sent without its issuer CN=gpuhost test CA", "/etc/ssl/certs/ca-certificates.crt"},
			"GH-SSH-002": {"Match User x", sshConf + ":10"},
			"GH-SSH-004": {"aes128-cbc"},
			"GH-SSH-005": {"diffie-hellman-group14-sha1"},
			"GH-SSH-006": {"hmac-sha1"},
			"GH-NET-003": {fmt.Sprint(mtlsPort), fmt.Sprint(sshPort)},
			"GH-NET-004": {"192.0.2.1 port 9443 (openssl)", "inet filter allowed", "@services"},
		} {
			r := res[id]
			msgs := strings.Join(r.Messages, "\n")
			if r.Status != reports.StatusFail {
				t.Errorf("%s: %s %q, want fail", id, r.Status, r.Messages)
				continue
			}
			for _, w := range want {
				if !strings.Contains(msgs, w) {
					t.Errorf("%s: messages %q do not name %q", id, r.Messages, w)
				}
			}
		}
	})

	t.Run("hardened", func(t *testing.T) {
		h := newLiveHost(t)
		cert, key, _ := testutil.WriteCert(t, t.TempDir(), sound)
		h.nginx(t, "TLSv1.3", cert, key)
		for _, port := range []int{mtlsPort, legacyPort, expiredPort} {
			h.sServer(t, port, cert, key, "-tls1_3")
		}
		h.sshd(t, hardenedSSHD)
		h.nft(t, "22")
		res, _ := h.scan(t)
		for _, id := range liveChecks {
			if r := res[id]; r.Status != reports.StatusPass {
				t.Errorf("%s: %s %q on the hardened host, want pass", id, r.Status, r.Messages)
			}
		}
	})
}
