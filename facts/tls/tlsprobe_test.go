package tls

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

func tlsServer(t *testing.T, min, max uint16) int {
	t.Helper()
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	s.TLS = &tls.Config{MinVersion: min, MaxVersion: max}
	// Refused handshakes are the point of the test, not noise to log.
	s.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.StartTLS()
	t.Cleanup(s.Close)
	return s.Listener.Addr().(*net.TCPAddr).Port
}

// bannerServer speaks first, as sshd does, and never speaks TLS.
func bannerServer(t *testing.T) int {
	port, _ := countingServer(t, true)
	return port
}

// countingServer never speaks TLS: it greets first as sshd does, or
// answers whatever it is sent with an HTTP error as a plain HTTP server
// does. It counts the connections it accepted.
func countingServer(t *testing.T, greet bool) (int, *atomic.Int32) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	var n atomic.Int32
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n.Add(1)
			go func() {
				defer c.Close()
				if greet {
					c.Write([]byte("SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n"))
				}
				buf := make([]byte, 512)
				c.Read(buf)
				if !greet {
					c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n"))
				}
			}()
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port, &n
}

// TestTLSProbeLeavesServersThatAreNotTLS: a server that greets first, or
// answers the hello with something not TLS, gets one connection and is no
// TLS listener; a TLS server gets every version asked.
func TestTLSProbeLeavesServersThatAreNotTLS(t *testing.T) {
	ssh, sshConns := countingServer(t, true)
	plain, plainConns := countingServer(t, false)
	p := &prober{timeout: 2 * time.Second, sem: make(chan struct{}, 4)}
	for name, tc := range map[string]struct {
		port  int
		conns *atomic.Int32
	}{"greets first": {ssh, sshConns}, "answers in HTTP": {plain, plainConns}} {
		r := p.listener(context.Background(), probeTarget{listen: "127.0.0.1:" + strconv.Itoa(tc.port), dial: "127.0.0.1:" + strconv.Itoa(tc.port), port: tc.port})
		if r != nil {
			t.Errorf("%s: taken for a TLS listener: %+v", name, r)
		}
		if n := tc.conns.Load(); n != 1 {
			t.Errorf("%s: %d connections, want 1", name, n)
		}
	}
	only13 := tlsServer(t, tls.VersionTLS13, 0)
	r := p.listener(context.Background(), probeTarget{listen: "127.0.0.1:" + strconv.Itoa(only13), dial: "127.0.0.1:" + strconv.Itoa(only13), port: only13})
	if r == nil || !r.TLS13Accepted || r.TLS12Accepted || r.Error != "" {
		t.Errorf("a TLS 1.3 server after the wait: %+v", r)
	}
	// On a conventional TLS port the same greeting is reported, not
	// skipped: a port meant for TLS that speaks something else is wrong.
	r = p.listener(context.Background(), probeTarget{listen: "127.0.0.1:" + strconv.Itoa(ssh), dial: "127.0.0.1:" + strconv.Itoa(ssh), port: 443})
	if r == nil || !strings.Contains(r.Error, "tls1.3: the server spoke first") {
		t.Errorf("a greeting on port 443: %+v", r)
	}
}

func TestTLSProbe(t *testing.T) {
	only13 := tlsServer(t, tls.VersionTLS13, 0)
	both := tlsServer(t, tls.VersionTLS12, 0)
	only12 := tlsServer(t, tls.VersionTLS12, tls.VersionTLS12)
	banner := bannerServer(t)

	f := listening(
		facts.Listener{Proto: "tcp", Address: "127.0.0.1", Port: only13},
		// A wildcard listener is probed on loopback.
		facts.Listener{Proto: "tcp", Address: "0.0.0.0", Port: both},
		facts.Listener{Proto: "tcp", Address: "127.0.0.1", Port: only12},
		facts.Listener{Proto: "tcp", Address: "127.0.0.1", Port: banner},
		facts.Listener{Proto: "udp", Address: "127.0.0.1", Port: only13},
	)
	env := collecttest.NewEnv(t, t.TempDir(), true)
	if err := collectOne(t, env, f, "tls_probe"); err != nil {
		t.Fatal(err)
	}
	want := map[string]facts.TLSProbe{
		"127.0.0.1:" + strconv.Itoa(only13): {TLS12Accepted: false, TLS13Accepted: true},
		"0.0.0.0:" + strconv.Itoa(both):     {TLS12Accepted: true, TLS13Accepted: true},
		"127.0.0.1:" + strconv.Itoa(only12): {TLS12Accepted: true, TLS13Accepted: false},
	}
	if f.TLS == nil || f.TLS.Nginx == nil || len(f.TLS.Probes) != len(want) {
		t.Fatalf("tls %+v, want %d probes (the banner port skipped)", f.TLS, len(want))
	}
	for _, p := range f.TLS.Probes {
		w, ok := want[p.Address]
		if !ok {
			t.Errorf("unexpected probe %+v", p)
			continue
		}
		if p.TLS12Accepted != w.TLS12Accepted || p.TLS13Accepted != w.TLS13Accepted || p.Error != "" {
			t.Errorf("probe %s = %+v, want 1.2=%v 1.3=%v and no error", p.Address, p, w.TLS12Accepted, w.TLS13Accepted)
		}
	}
}

func TestTLSProbeNeedsListeners(t *testing.T) {
	err := collectOne(t, collecttest.NewEnv(t, t.TempDir(), true), newDoc(facts.KindHost), "tls_probe")
	if st, reason := collect.Classify(err); st != collect.StatusUnavailable || reason != "no listening sockets known" {
		t.Errorf("%s %q", st, reason)
	}
	// The firewall collector leaves an empty list of listeners when the
	// network collector failed: that is not a host without listeners.
	f := newDoc(facts.KindHost)
	f.Network = &facts.Network{Listening: []facts.Listener{}}
	f.Record("network", collect.StatusError, "reading sockets: permission denied")
	err = collectOne(t, collecttest.NewEnv(t, t.TempDir(), true), f, "tls_probe")
	if st, reason := collect.Classify(err); st != collect.StatusUnavailable || reason != "no listening sockets known: the network collector is error: reading sockets: permission denied" {
		t.Errorf("%s %q", st, reason)
	}
}

func TestTLSProbeCancelled(t *testing.T) {
	port := tlsServer(t, tls.VersionTLS13, 0)
	f := listening(facts.Listener{Proto: "tcp", Address: "127.0.0.1", Port: port})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got, _, err := CollectProbes(ctx, collecttest.NewEnv(t, t.TempDir(), true), f.TLS, f.Network, collect.StatusOK, "")
	if err == nil {
		t.Errorf("cancelled probe succeeded: %+v", got)
	}
}

// A connect that draws no answer is named filtered, apart from a stalled
// handshake, so an operator knows to look at the firewall first.
func TestUnreachableSaysWhich(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
	read := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for err, want := range map[error]string{
		dial: "filtered: the TCP connect got no answer within 2s",
		read: "timed out: connected, but no ServerHello within 2s",
	} {
		if got := unreachable(err, 2*time.Second); got != want {
			t.Errorf("%v: got %q, want %q", err, got, want)
		}
	}
}

// TestTLSProbeListsWhatItDoesNotJudge: every listener is judged or named.
// A port that speaks SSH or HTTP is noted as not TLS with what it said, a
// UDP port as not probed, and a closed port, which the probe cannot
// reach, is a probe whose error the checks report.
func TestTLSProbeListsWhatItDoesNotJudge(t *testing.T) {
	ssh, _ := countingServer(t, true)
	plain, _ := countingServer(t, false)
	closed := testutil.FreePort(t)
	f := listening(
		facts.Listener{Proto: "tcp", Address: "0.0.0.0", Port: ssh, Process: "sshd"},
		facts.Listener{Proto: "tcp6", Address: "::1", Port: plain},
		facts.Listener{Proto: "tcp", Address: "127.0.0.1", Port: plain},
		facts.Listener{Proto: "tcp", Address: "127.0.0.1", Port: closed},
		facts.Listener{Proto: "udp", Address: "0.0.0.0", Port: 5353, Process: "avahi-daemon"},
		facts.Listener{Proto: "udp6", Address: "::", Port: 443},
	)
	env := collecttest.NewEnv(t, t.TempDir(), true)
	if err := collectOne(t, env, f, "tls_probe"); err != nil {
		t.Fatal(err)
	}
	if err := facts.Validate(*f); err != nil {
		t.Errorf("probe facts do not validate: %v", err)
	}
	want := []facts.NotJudged{
		{Collector: "tls_probe", What: fmt.Sprintf("0.0.0.0:%d/tcp (sshd): not TLS: it spoke first, which no TLS server does: %q", ssh, "SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13")},
		{Collector: "tls_probe", What: "0.0.0.0:5353/udp (avahi-daemon): not probed: the TLS probe speaks TCP only, so DTLS or QUIC here goes unjudged"},
		{Collector: "tls_probe", What: fmt.Sprintf("127.0.0.1:%d/tcp: not TLS: it answered a TLS hello with something else (the answer is not a TLS record: it starts 48 54 54)", plain)},
		{Collector: "tls_probe", What: "[::]:443/udp: not probed: the TLS probe speaks TCP only, so DTLS or QUIC here goes unjudged"},
	}
	got := f.NotJudged
	// The IPv6 loopback may be missing on the test machine: then that
	// listener is unreachable, else not TLS.
	v6 := slices.IndexFunc(got, func(n facts.NotJudged) bool { return strings.HasPrefix(n.What, "[::1]:") })
	if v6 >= 0 {
		got = slices.Delete(slices.Clone(got), v6, v6+1)
	}
	if !slices.Equal(got, want) {
		t.Errorf("not judged:\n%s\nwant\n%s", notJudgedText(got), notJudgedText(want))
	}
	var gone *facts.TLSProbe
	for i, p := range f.TLS.Probes {
		if p.Address == "127.0.0.1:"+strconv.Itoa(closed) {
			gone = &f.TLS.Probes[i]
		}
	}
	if gone == nil || !gone.Unreachable || !gone.Loopback || gone.Connections != 1 ||
		gone.Error != "connection refused: the listener is gone or refuses this address" {
		t.Fatalf("the closed port: %+v, want an unreachable probe", gone)
	}
	if deny, errs := verdict(t, *gone, "probe_loopback", map[string]any{"tls_loopback_severity": "medium"}); deny != nil ||
		!slices.Equal(errs, []string{fmt.Sprintf("loopback-only 127.0.0.1:%d could not be reached, so its verdict is unknown: %s", closed, gone.Error)}) {
		t.Errorf("GH-TLS-007: deny %q errors %q, want the closed port an error", deny, errs)
	}
}

func notJudgedText(ns []facts.NotJudged) string {
	var b strings.Builder
	for _, n := range ns {
		b.WriteString("  " + n.Collector + ": " + n.What + "\n")
	}
	return b.String()
}
