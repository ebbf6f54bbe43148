package tls

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

// netnsChildEnv names the file the probe inside the test's network
// namespace writes its facts to; set only for that run.
const netnsChildEnv = "GPUHOST_TLS_NETNS_FACTS"

// Loopback ports in the namespace: one the firewall drops, one it
// rejects with a reset, one it leaves open, and one on the IPv6 wildcard
// of a loopback without IPv6.
const (
	droppedPort  = 7000
	rejectedPort = 7001
	openPort     = 7002
	dualPort     = 7003
)

// filterRuleset filters the namespace's own loopback, as a host firewall
// that is too strict does.
var filterRuleset = fmt.Sprintf(`table inet gpuhost_probe_test {
	chain input {
		type filter hook input priority filter; policy accept;
		iif "lo" tcp dport %d drop
		iif "lo" tcp dport %d reject with tcp reset
	}
}
`, droppedPort, rejectedPort)

// TestFilteredLoopbackListenerIsAnError: a TLS listener on loopback that
// the firewall filters was dropped from the probes without a word, and
// GH-TLS-007 passed. In a network namespace of the test's own, whose
// nftables ruleset drops loopback TCP to one port and rejects another,
// the probe (run inside it) reports both as unreachable, and GH-TLS-007
// errors naming each; the open port is judged, and so is a dual-stack
// [::] listener though the namespace's loopback has no IPv6.
func TestFilteredLoopbackListenerIsAnError(t *testing.T) {
	prefix := testutil.Netns(t)
	nft := testutil.Tool(t, "nft", "nftables")
	rules := filepath.Join(t.TempDir(), "filter.nft")
	if err := os.WriteFile(rules, []byte(filterRuleset), 0o644); err != nil {
		t.Fatal(err)
	}
	testutil.Run(t, 30*time.Second, prefix[0], append(prefix[1:], nft, "-f", rules)...)
	// A host that turns IPv6 off keeps its dual-stack [::] sockets, which
	// only the IPv4 loopback then reaches.
	testutil.Run(t, 30*time.Second, prefix[0], append(prefix[1:], "sh", "-c", "echo 1 > /proc/sys/net/ipv6/conf/lo/disable_ipv6")...)

	out := filepath.Join(t.TempDir(), "facts.json")
	data := factsFromNetns(t, prefix, "TestProbeInsideNetns", netnsChildEnv+"="+out, out)
	var f struct {
		TLS *facts.TLS `json:"tls"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	want := map[int]string{
		droppedPort:  "filtered: the TCP connect got no answer within 1s",
		rejectedPort: "connection refused: the listener is gone or refuses this address",
	}
	var errs []string
	for _, p := range f.TLS.Probes {
		t.Logf("%s: unreachable %v, protocols %v, error %q", p.Address, p.Unreachable, p.Protocols, p.Error)
		_, ps, _ := net.SplitHostPort(p.Address)
		port, _ := strconv.Atoi(ps)
		switch {
		case port == openPort || port == dualPort:
			if !p.TLS13Accepted || p.Unreachable || p.Error != "" {
				t.Errorf("the open port %+v, want TLS 1.3 judged", p)
			}
			continue
		case !p.Unreachable || !p.Loopback || p.Connections != 1 || p.Error != want[port]:
			t.Errorf("%s: %+v, want unreachable: %s", p.Address, p, want[port])
		}
		errs = append(errs, fmt.Sprintf("loopback-only %s could not be reached, so its verdict is unknown: %s", p.Address, p.Error))
		delete(want, port)
	}
	if len(want) > 0 {
		t.Errorf("no probe of %v among %+v", want, f.TLS.Probes)
	}
	slices.Sort(errs)
	if deny, got := verdictAll(t, f.TLS.Probes, "probe_loopback", map[string]any{"tls_loopback_severity": "medium"}); deny != nil || !slices.Equal(got, errs) {
		t.Errorf("GH-TLS-007: deny %q, errors %q, want %q", deny, got, errs)
	}
}

// factsFromNetns runs test, the probe's side of a test, inside the
// namespace prefix enters, with env set, and returns the facts document
// it wrote to out, checked against the schema.
func factsFromNetns(t *testing.T, prefix []string, test, env, out string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, prefix[0], append(prefix[1:], os.Args[0], "-test.run=^"+test+"$", "-test.v")...)
	cmd.Env = append(os.Environ(), env)
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the probe inside the namespace: %v\n%s", err, output)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := facts.ValidateJSON(data); err != nil {
		t.Errorf("the namespace's facts do not validate: %v", err)
	}
	return data
}

// TestProbeInsideNetns is the probe's side of
// TestFilteredLoopbackListenerIsAnError, run by it inside its namespace:
// a TLS 1.3 listener on each loopback port, probed, the facts written
// where the parent reads them.
func TestProbeInsideNetns(t *testing.T) {
	out := os.Getenv(netnsChildEnv)
	if out == "" {
		t.Skip("runs only inside the network namespace TestFilteredLoopbackListenerIsAnError makes")
	}
	_, _, cert := testutil.WriteCert(t, t.TempDir(), loopbackCert)
	f := listening()
	for _, l := range []facts.Listener{
		{Proto: "tcp", Address: "127.0.0.1", Port: droppedPort},
		{Proto: "tcp", Address: "127.0.0.1", Port: rejectedPort},
		{Proto: "tcp", Address: "127.0.0.1", Port: openPort},
		{Proto: "tcp6", Address: "::", Port: dualPort},
	} {
		addr := net.JoinHostPort(l.Address, strconv.Itoa(l.Port))
		ln, err := tls.Listen("tcp", addr, &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go acceptHandshakes(ln)
		f.Network.Listening = append(f.Network.Listening, l)
	}
	env := collecttest.NewEnv(t, t.TempDir(), true)
	env.ProbeTimeout = time.Second
	if err := collectOne(t, env, f, "tls_probe"); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
