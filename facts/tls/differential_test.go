package tls

// TestTLSDifferential holds the probe to its peers on generated servers:
// each case is an openssl s_server with random versions, suites, groups
// and certificates, and often a second certificate it sends only to
// clients that name a virtual host. sslscan says what the server accepts;
// openssl s_client says which certificate each kind of client gets, and
// openssl x509 whether that certificate has expired, how large its key is
// and whether it covers the name asked for. The probe's facts, and the
// verdicts of GH-TLS-005 and GH-TLS-009 on them, must agree with each.
//
// make test runs a fixed seed's few cases; make differential runs from
// DIFFERENTIAL_SEED until its time is spent.

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

var (
	tlsDiffCases    = flag.Int("differential.tls-cases", 24, "how many generated servers TestTLSDifferential runs")
	tlsDiffSeed     = flag.Uint64("differential.tls-seed", 1, "the seed of TestTLSDifferential's first server")
	tlsDiffDuration = flag.Duration("differential.tls-duration", 0, "stop TestTLSDifferential after this long (0: after -differential.tls-cases)")
)

// vhostName is the virtual host a case's second certificate is for.
const vhostName = "vhost.gpuhost.test"

// tlsCase is one generated server.
type tlsCase struct {
	seed uint64
	// args are s_server's arguments beyond the certificate and the port.
	args []string
	cert testutil.CertSpec
	// vhost is the certificate s_server sends to a client that names
	// vhostName; nil for a server with one certificate.
	vhost *testutil.CertSpec
	// configured: vhostName is known to the probe as an nginx
	// server_name of the port, not as a name in cert.
	configured bool
	// staple: 0 a plain leaf; 1 a must-staple leaf (issued by a CA of
	// the case's) that s_server staples nothing for; 2 one it staples an
	// OCSP response for.
	staple   int
	features []string
}

func (c tlsCase) String() string {
	s := fmt.Sprintf("seed %d: s_server %s, key %s", c.seed, strings.Join(c.args, " "), c.cert.Key)
	if c.vhost != nil {
		s += fmt.Sprintf(", vhost key %s names %v", c.vhost.Key, c.vhost.DNS)
	}
	return s
}

// The pools a case draws from: OpenSSL's names, which s_server takes.
var (
	rsaSuites = []string{"ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-CHACHA20-POLY1305",
		"ECDHE-RSA-AES128-SHA", "DHE-RSA-AES128-GCM-SHA256", "DHE-RSA-AES256-SHA256", "AES128-GCM-SHA256", "AES256-SHA", "AES128-SHA256"}
	ecSuites = []string{"ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305",
		"ECDHE-ECDSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA384"}
	diffSuites13 = []string{"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256", "TLS_AES_128_CCM_SHA256"}
	diffGroup    = []string{"X25519", "P-256", "P-384", "P-521", "X448", "ffdhe2048"}
	diffVersions = []string{"TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"}
)

// some picks a non-empty random subset of pool, in pool order.
func some(r *rand.Rand, pool []string) []string {
	var out []string
	for len(out) == 0 {
		for _, s := range pool {
			if r.IntN(3) == 0 {
				out = append(out, s)
			}
		}
	}
	return out
}

// cert draws a server certificate: mostly sound, sometimes expired, not
// yet valid or with a 1024-bit key.
func drawCert(r *rand.Rand, names []string, features *[]string) testutil.CertSpec {
	c := testutil.CertSpec{Key: []string{"rsa2048", "p256", "rsa1024"}[r.IntN(3)], DNS: names}
	switch r.IntN(6) {
	case 0:
		c.NotAfter = time.Now().Add(-time.Duration(1+r.IntN(400)) * 24 * time.Hour)
		*features = append(*features, "expired")
	case 1:
		c.NotBefore = time.Now().Add(time.Duration(1+r.IntN(30)) * 24 * time.Hour)
		c.NotAfter = c.NotBefore.Add(365 * 24 * time.Hour)
		*features = append(*features, "not yet valid")
	}
	if c.Key == "rsa1024" {
		*features = append(*features, "rsa1024")
	}
	return c
}

func genTLSCase(seed uint64) tlsCase {
	r := rand.New(rand.NewPCG(seed, 0x7e5))
	c := tlsCase{seed: seed}
	// A range, as servers are configured: OpenSSL takes the versions a
	// -no_tls1_2 leaves on either side of it as a range with a hole,
	// which s_server then serves inconsistently.
	lo := r.IntN(len(diffVersions))
	hi := lo + r.IntN(len(diffVersions)-lo)
	c.args = append(c.args, "-min_protocol", diffVersions[lo], "-max_protocol", diffVersions[hi])
	c.features = append(c.features, diffVersions[lo:hi+1]...)
	names := []string{"localhost"}
	if r.IntN(2) == 0 {
		c.vhost = new(testutil.CertSpec)
		c.configured = r.IntN(2) == 0
		if !c.configured {
			names = append(names, vhostName)
		}
	}
	c.cert = drawCert(r, names, &c.features)
	pool := rsaSuites
	if c.cert.Key == "p256" {
		pool = ecSuites
	}
	c.args = append(c.args, "-cipher", strings.Join(some(r, pool), ":")+":@SECLEVEL=0",
		"-ciphersuites", strings.Join(some(r, diffSuites13), ":"), "-groups", strings.Join(some(r, diffGroup), ":"))
	if c.vhost != nil {
		vnames := []string{vhostName}
		if r.IntN(3) == 0 {
			vnames = []string{"other.gpuhost.test"}
			c.features = append(c.features, "vhost name mismatch")
		}
		*c.vhost = drawCert(r, vnames, &c.features)
		// The second certificate shares the suites drawn for the first
		// key's type, so it must be of that type to be usable.
		if (c.vhost.Key == "p256") != (c.cert.Key == "p256") {
			c.vhost.Key = c.cert.Key
		}
		c.features = append(c.features, "sni")
		if c.configured {
			c.features = append(c.features, "name from nginx")
		}
	}
	// Drawn last, so that the earlier seeds' servers stay as they were.
	if r.IntN(4) == 0 {
		c.staple = 1 + r.IntN(2)
		c.features = append(c.features, []string{"", "must-staple, none stapled", "must-staple, stapled"}[c.staple])
	}
	return c
}

// startSServer is sServerFiles with the process, whose exit the case
// watches.
func startSServer(t *testing.T, certPath, keyPath string, args ...string) (int, *testutil.Proc) {
	t.Helper()
	openssl := testutil.Tool(t, "openssl", "openssl")
	for range 5 {
		port := testutil.FreePort(t)
		argv := append([]string{"s_server", "-quiet", "-naccept", "100000", "-accept", "127.0.0.1:" + strconv.Itoa(port),
			"-cert", certPath, "-key", keyPath}, args...)
		p := testutil.Start(t, exec.Command(openssl, argv...))
		ok := false
		p.WaitFor(t, 10*time.Second, "a listening s_server", func() bool {
			ok = dialable(port)
			return ok || p.Exited()
		})
		if ok {
			return port, p
		}
		if !strings.Contains(p.Output(), "in use") {
			t.Fatalf("s_server %v exited:\n%s", argv, p.Output())
		}
	}
	t.Fatal("no free port for s_server after 5 tries")
	return 0, nil
}

// peerView is what a client sees of one kind of handshake.
type peerView struct {
	leafSHA string
	expired bool // openssl x509 -checkend 0
	early   bool // notBefore after now
	bits    int
	matches bool // openssl x509 -checkhost name
	stapled bool // s_client -status saw an OCSP response
	err     error
}

// peerLeaf asks openssl s_client for the leaf the server sends with name
// (none when ""), and openssl x509 what it says of it.
func peerLeaf(t *testing.T, dir string, port int, name string) peerView {
	t.Helper()
	var v peerView
	args := append([]string{"s_client", "-connect", "127.0.0.1:" + strconv.Itoa(port), "-showcerts", "-status"}, sClientOffers...)
	if name == "" {
		args = append(args, "-noservername")
	} else {
		args = append(args, "-servername", name)
	}
	out, err := runPeer(20*time.Second, "openssl", args...)
	block, sha := shownLeaf(out)
	if block == nil {
		v.err = fmt.Errorf("s_client showed no certificate: %v\n%s", err, out)
		return v
	}
	v.leafSHA = sha
	v.stapled = strings.Contains(out, "OCSP Response Status: successful")
	leaf := filepath.Join(dir, "leaf-"+v.leafSHA[:12]+".pem")
	if err := os.WriteFile(leaf, pem.EncodeToMemory(block), 0o600); err != nil {
		v.err = err
		return v
	}
	end, _ := runPeer(10*time.Second, "openssl", "x509", "-noout", "-in", leaf, "-checkend", "0")
	v.expired = strings.Contains(end, "will expire")
	text, _ := runPeer(10*time.Second, "openssl", "x509", "-noout", "-text", "-in", leaf)
	if m := regexp.MustCompile(`Public-Key: \((\d+) bit\)`).FindStringSubmatch(text); m != nil {
		v.bits, _ = strconv.Atoi(m[1])
	}
	if m := regexp.MustCompile(`Not Before: (.+)`).FindStringSubmatch(text); m != nil {
		nb, err := time.Parse("Jan _2 15:04:05 2006 MST", strings.TrimSpace(m[1]))
		v.early = err == nil && nb.After(time.Now())
	}
	if name != "" {
		host, _ := runPeer(10*time.Second, "openssl", "x509", "-noout", "-in", leaf, "-checkhost", name)
		v.matches = strings.Contains(host, " does match ")
	}
	return v
}

// shownLeaf is the first certificate s_client -showcerts printed, and the
// SHA-256 of its DER as the facts give it; nil where it printed none.
func shownLeaf(out string) (*pem.Block, string) {
	block, _ := pem.Decode([]byte(out[max(strings.Index(out, "-----BEGIN CERTIFICATE-----"), 0):]))
	if block == nil {
		return nil, ""
	}
	sum := sha256.Sum256(block.Bytes)
	return block, hex.EncodeToString(sum[:])
}

// sClientOffers are the s_client arguments that offer every version, suite
// and group a case's server may take.
var sClientOffers = []string{"-cipher", "ALL:@SECLEVEL=0", "-ciphersuites", strings.Join(append(slices.Clone(diffSuites13), "TLS_AES_128_CCM_8_SHA256"), ":")}

// sClientVersion is s_client's option for one version.
var sClientVersion = map[string]string{"TLSv1": "-tls1", "TLSv1.1": "-tls1_1", "TLSv1.2": "-tls1_2", "TLSv1.3": "-tls1_3"}

// sClientTakes asks openssl s_client whether the server completes a
// handshake at version with suite (an IANA name) alone, or at TLS 1.3 with
// group alone: the arbiter where the probe and sslscan differ.
func sClientTakes(t *testing.T, port int, version, suite, group string) (bool, string) {
	t.Helper()
	args := []string{"s_client", "-connect", "127.0.0.1:" + strconv.Itoa(port), "-noservername", sClientVersion[version]}
	switch {
	case group != "" && version != "TLSv1.3":
		// An ECDSA certificate's curve must be offered too (RFC 8422,
		// 5.1), after the one asked: the server takes the first it has,
		// and the temporary key says which it took.
		groups := group
		if group != "secp256r1" {
			groups += ":P-256"
		}
		args = append(args, "-groups", groups, "-cipher", "ECDHE:@SECLEVEL=0")
		out, _ := runPeer(20*time.Second, "openssl", args...)
		key := regexp.MustCompile(`Server Temp Key: (?:ECDH, )?([^,]+),`).FindStringSubmatch(out)
		want := map[string]string{"secp256r1": "prime256v1"}[group]
		return key != nil && strings.EqualFold(key[1], cmp.Or(want, group)), strings.Join(args, " ")
	case group != "":
		args = append(args, "-groups", group)
	case version == "TLSv1.3":
		args = append(args, "-ciphersuites", suite)
	default:
		args = append(args, "-cipher", opensslName(t, suite)+":@SECLEVEL=0")
	}
	out, _ := runPeer(20*time.Second, "openssl", args...)
	m := regexp.MustCompile(`(?m)^New, (\S+), Cipher is (\S+)`).FindStringSubmatch(out)
	return m != nil && m[2] != "(NONE)", strings.Join(args, " ")
}

// sClientDHBits asks openssl s_client, naming no server, for the size of
// the DH key the server sends with one DHE suite.
func sClientDHBits(port int, version, suite string) (int, string) {
	args := []string{"s_client", "-connect", "127.0.0.1:" + strconv.Itoa(port), "-noservername", sClientVersion[version], "-cipher", suite + ":@SECLEVEL=0"}
	out, _ := runPeer(20*time.Second, "openssl", args...)
	m := regexp.MustCompile(`Server Temp Key: DH, (\d+) bits`).FindStringSubmatch(out)
	if m == nil {
		return 0, strings.Join(args, " ")
	}
	bits, _ := strconv.Atoi(m[1])
	return bits, strings.Join(args, " ")
}

// opensslName is the OpenSSL name of a suite's IANA name.
func opensslName(t *testing.T, iana string) string {
	for o, i := range ianaTable(t) {
		if i == iana {
			return o
		}
	}
	return iana
}

// items lists what a listener accepts one by one: "TLSv1.2 SUITE" and
// "group NAME".
func (a accepts) items() []string {
	var out []string
	for v, ss := range a.suites {
		for _, s := range ss {
			out = append(out, v+" "+s)
		}
	}
	for _, g := range a.groups {
		out = append(out, "group "+g)
	}
	slices.Sort(out)
	return out
}

// arbitrate settles each item the probe and sslscan disagree on with
// s_client, and returns where the probe and s_client disagree; notes says
// where sslscan was the one s_client overruled.
func arbitrate(t *testing.T, port int, got, want accepts) (ds, notes []string) {
	g, w := got.items(), want.items()
	for _, it := range symmetricDifference(g, w) {
		var ok bool
		var how string
		if name, found := strings.CutPrefix(it, "group "); found {
			ok, how = sClientTakes(t, port, "TLSv1.3", "", name)
		} else {
			v, s, _ := strings.Cut(it, " ")
			ok, how = sClientTakes(t, port, v, s, "")
		}
		probe := slices.Contains(g, it)
		if ok != probe {
			ds = append(ds, fmt.Sprintf("%s: the probe says %v, sslscan %v, `openssl %s` %v", it, probe, !probe, how, ok))
		} else {
			notes = append(notes, fmt.Sprintf("%s: sslscan says %v; `openssl %s` sides with the probe", it, !probe, how))
		}
	}
	return ds, notes
}

// symmetricDifference lists what is in one of a and b only.
func symmetricDifference(a, b []string) []string {
	var out []string
	for _, x := range a {
		if !slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			out = append(out, x)
		}
	}
	return out
}

// runPeer runs a peer tool, whose exit status does not say whether its
// output holds the answer, and returns what it printed.
func runPeer(timeout time.Duration, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = nil
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// oursFor is the leaf the probe's facts give a client that asks with name.
func oursFor(p facts.TLSProbe, name string) (*facts.TLSChainCert, *facts.TLSView, error) {
	if name == "" {
		if len(p.Chain) == 0 {
			return nil, nil, errors.New("no chain")
		}
		return &p.Chain[0], nil, nil
	}
	for i, v := range p.Views {
		if v.ServerName != name {
			continue
		}
		switch {
		case v.Error != "":
			return nil, &p.Views[i], errors.New(v.Error)
		case v.SameAsDefault && len(p.Chain) > 0:
			return &p.Chain[0], &p.Views[i], nil
		case len(v.Chain) > 0:
			return &v.Chain[0], &p.Views[i], nil
		}
		return nil, &p.Views[i], errors.New("a view with no chain")
	}
	return nil, nil, fmt.Errorf("no view asked %s", name)
}

// differ lists where the probe and its verdicts part from the peers.
func (c tlsCase) differ(t *testing.T, dir string, port int, p facts.TLSProbe) (ds, notes []string) {
	if p.Error != "" && !strings.HasPrefix(p.Error, "no protocol version accepted") {
		ds = append(ds, "the probe's error: "+p.Error)
	}
	// sslscan names the host it scans (127.0.0.1) where no name is given,
	// and s_server refuses a name it does not know with a warning that
	// sslscan takes for a refusal; the virtual host's name it knows.
	var sni []string
	if c.vhost != nil {
		sni = append(sni, "--sni-name="+vhostName)
	}
	want, _ := sslscanAccepts(t, port, sni...)
	got := probeAccepts(p)
	if !got.equal(want) {
		ds, notes = arbitrate(t, port, got, want)
	}
	for k, bits := range want.dhBits {
		g, ok := got.dhBits[k]
		if ok && g == bits || !ok && !slices.Contains(got.items(), k) {
			continue
		}
		// sslscan names a virtual host, whose certificate may size the
		// server's automatic DH parameters otherwise; s_client, naming
		// none as the probe does, decides.
		v, s, _ := strings.Cut(k, " ")
		arbiter, how := sClientDHBits(port, v, opensslName(t, s))
		if arbiter != g {
			ds = append(ds, fmt.Sprintf("%s: the probe says DHE over %d bits, sslscan %d, `openssl %s` %d", k, g, bits, how, arbiter))
		} else {
			notes = append(notes, fmt.Sprintf("%s: sslscan says DHE over %d bits; `openssl %s` sides with the probe's %d", k, bits, how, g))
		}
	}
	if slices.Contains(got.protocols, "TLSv1.2") {
		for _, curve := range symmetricDifference(got.curves12, want.curves12) {
			ok, how := sClientTakes(t, port, "TLSv1.2", "", curve)
			if probe := slices.Contains(got.curves12, curve); ok != probe {
				ds = append(ds, fmt.Sprintf("TLS 1.2 curve %s: the probe says %v, sslscan %v, `openssl %s` %v", curve, probe, !probe, how, ok))
			} else {
				notes = append(notes, fmt.Sprintf("TLS 1.2 curve %s: sslscan says %v; `openssl %s` sides with the probe", curve, !probe, how))
			}
		}
	}
	if tlsLimitOf(p.Error) != "" {
		// The probe says it has no certificate; the views say the same.
		return ds, notes
	}
	if len(p.Protocols) == 0 && len(want.protocols) == 0 {
		// A server that accepts nothing sends no certificate.
		return ds, notes
	}
	names := []string{""}
	if c.vhost != nil {
		names = append(names, vhostName)
	}
	certDeny, _ := verdict(t, p, "probe_certificate", map[string]any{"tls_cert_min_days": 0})
	nameDeny, nameErrs := verdict(t, p, "probe_server_names", nil)
	for _, name := range names {
		peer := peerLeaf(t, dir, port, name)
		if peer.err != nil {
			ds = append(ds, fmt.Sprintf("name %q: %v", name, peer.err))
			continue
		}
		leaf, view, err := oursFor(p, name)
		if err != nil {
			ds = append(ds, fmt.Sprintf("name %q: s_client got leaf %s; the probe: %v", name, peer.leafSHA[:12], err))
			continue
		}
		if leaf.SHA256 != peer.leafSHA {
			ds = append(ds, fmt.Sprintf("name %q: s_client got leaf %s, the probe %s", name, peer.leafSHA[:12], leaf.SHA256[:12]))
			continue
		}
		if got := leaf.SecondsLeft <= 0; got != peer.expired {
			ds = append(ds, fmt.Sprintf("name %q: x509 -checkend says expired %v, the probe %v", name, peer.expired, got))
		}
		if leaf.NotYetValid != peer.early {
			ds = append(ds, fmt.Sprintf("name %q: x509 says not yet valid %v, the probe %v", name, peer.early, leaf.NotYetValid))
		}
		if leaf.KeyBits != peer.bits {
			ds = append(ds, fmt.Sprintf("name %q: x509 says %d-bit key, the probe %d", name, peer.bits, leaf.KeyBits))
		}
		label := p.Address
		if name != "" {
			label += " for server name " + name
		}
		// A leaf the default handshake also got is judged there, once.
		judgedAs := label
		if view != nil && view.SameAsDefault {
			judgedAs = p.Address
		}
		saidAs := func(part string) bool {
			return slices.ContainsFunc(certDeny, func(m string) bool {
				return strings.HasPrefix(m, judgedAs+": certificate 0 ") && strings.Contains(m, part)
			})
		}
		if got := saidAs(": expired on "); got != peer.expired {
			ds = append(ds, fmt.Sprintf("name %q: GH-TLS-005 names it expired %v; x509 -checkend %v (%q)", name, got, peer.expired, certDeny))
		}
		if got := saidAs("-bit RSA key"); got != (peer.bits < 2048 && strings.HasPrefix(c.keyFor(name), "rsa")) {
			ds = append(ds, fmt.Sprintf("name %q: GH-TLS-005 names a small RSA key %v; x509 says %d bits (%q)", name, got, peer.bits, certDeny))
		}
		if name == "" {
			ds = append(ds, c.stapling(p, peer, certDeny)...)
			continue
		}
		if view.NameMatches == nil || *view.NameMatches != peer.matches {
			ds = append(ds, fmt.Sprintf("name %q: x509 -checkhost says %v, the probe %v", name, peer.matches, view.NameMatches))
		}
		denied := slices.ContainsFunc(nameDeny, func(m string) bool { return strings.HasPrefix(m, label+" sends a certificate") })
		if denied == peer.matches || len(nameErrs) > 0 {
			ds = append(ds, fmt.Sprintf("name %q: GH-TLS-009 deny %q errors %q; x509 -checkhost says it matches %v", name, nameDeny, nameErrs, peer.matches))
		}
	}
	return ds, notes
}

// stapling compares what the probe says of a must-staple leaf with
// s_client -status, and GH-TLS-005's verdict on it.
func (c tlsCase) stapling(p facts.TLSProbe, peer peerView, certDeny []string) []string {
	if c.staple == 0 || len(p.Chain) == 0 {
		return nil
	}
	var ds []string
	if !p.Chain[0].MustStaple {
		ds = append(ds, "the leaf is must-staple; the probe says it is not")
	}
	if p.OCSPStapled == nil {
		return append(ds, "must-staple: "+stapleUnknown)
	}
	if *p.OCSPStapled != peer.stapled {
		ds = append(ds, fmt.Sprintf("s_client -status says stapled %v, the probe %v", peer.stapled, *p.OCSPStapled))
	}
	said := slices.ContainsFunc(certDeny, func(m string) bool { return strings.Contains(m, "carries must-staple") })
	if said == peer.stapled {
		ds = append(ds, fmt.Sprintf("GH-TLS-005 names the unstapled must-staple leaf %v; s_client -status says stapled %v", said, peer.stapled))
	}
	return ds
}

// stapleUnknown is what the harness says where the probe could not ask
// for a stapled response: a documented limit.
const stapleUnknown = "whether the server staples is unknown over the probe's own ffdhe handshake"

// keyFor is the key type of the certificate a client asking with name gets.
func (c tlsCase) keyFor(name string) string {
	if name != "" && c.vhost != nil {
		return c.vhost.Key
	}
	return c.cert.Key
}

// tlsLimits are the probe's documented limits (docs/limits.md): a
// disagreement that names one is logged and counted, not failed. Each has a
// test of its own that pins it.
var tlsLimits = []struct{ name, says string }{
	// TestFFDHEWithChaChaNamesTheMissingCertificate: the probe keys TLS
	// 1.3 with Go's client (no x448, no CCM suites) or its own ffdhe
	// exchange over AES-GCM, and says so where a server takes neither.
	{"a TLS 1.3 certificate neither Go's client nor the probe can key", "which neither Go's client nor the probe can key"},
	// TestMustStapleWithoutStapling's limit: the probe's own ffdhe
	// handshake asks for no OCSP response, and GH-TLS-005 errors.
	{"stapling over the probe's own ffdhe handshake", stapleUnknown},
}

// tlsLimitOf names the documented limit a disagreement is, or "".
func tlsLimitOf(d string) string {
	for _, l := range tlsLimits {
		if strings.Contains(d, l.says) {
			return l.name
		}
	}
	return ""
}

func TestTLSDifferential(t *testing.T) {
	testutil.Tool(t, "sslscan", "sslscan")
	var deadline time.Time
	if *tlsDiffDuration > 0 {
		deadline = time.Now().Add(*tlsDiffDuration)
	}
	perFeature := map[string][2]int{}
	ran, failed, peerExits, overruled, limited := 0, 0, 0, 0, 0
	for i := range *tlsDiffCases {
		if !deadline.IsZero() && time.Now().After(deadline) {
			break
		}
		c := genTLSCase(*tlsDiffSeed + uint64(i))
		var ds, notes []string
		gaveUp := false
		t.Run(strconv.FormatUint(c.seed, 10), func(t *testing.T) {
			dir := t.TempDir()
			spec, args := c.cert, slices.Clone(c.args)
			if c.staple > 0 {
				spec.CA, spec.MustStaple = testutil.NewCA(t), true
			}
			certPath, keyPath, pair := testutil.WriteCert(t, dir, spec)
			if c.staple == 2 {
				resp := filepath.Join(dir, "ocsp.der")
				spec.CA.OCSPResponse(t, pair.Certificate[0], resp)
				args = append(args, "-status_file", resp)
			}
			if c.vhost != nil {
				vdir := filepath.Join(dir, "vhost")
				if err := os.Mkdir(vdir, 0o700); err != nil {
					t.Fatal(err)
				}
				cert2, key2, _ := testutil.WriteCert(t, vdir, *c.vhost)
				args = append(args, "-servername", vhostName, "-cert2", cert2, "-key2", key2)
			}
			port, server := startSServer(t, certPath, keyPath, args...)
			f := listening(facts.Listener{Proto: "tcp", Address: "0.0.0.0", Port: port})
			if c.configured {
				f.TLS = &facts.TLS{Nginx: []facts.NginxTLS{}, Probes: []facts.TLSProbe{},
					ServerNames: []facts.TLSServerName{{Name: vhostName, Port: port, File: "/etc/nginx/sites-enabled/vhost", Line: 3}}}
			}
			if err := collectOne(t, collecttest.NewEnv(t, t.TempDir(), true), f, "tls_probe"); err != nil {
				t.Fatal(err)
			}
			if len(f.TLS.Probes) != 1 {
				ds = []string{fmt.Sprintf("probes %+v, not judged %q: want the port", f.TLS.Probes, f.NotJudged)}
			} else {
				ds, notes = c.differ(t, dir, port, f.TLS.Probes[0])
			}
			if server.Exited() {
				// s_server ends on some handshakes it cannot
				// serve; what the peers said after that is moot.
				gaveUp, ds, notes = true, nil, nil
				t.Logf("%v: s_server exited during the case:\n%s", c, server.Output())
			}
		})
		if gaveUp {
			peerExits++
			continue
		}
		for _, n := range notes {
			t.Logf("%v: %s", c, n)
		}
		overruled += len(notes)
		ran++
		real := 0
		for _, d := range ds {
			if l := tlsLimitOf(d); l != "" {
				limited++
				t.Logf("%v: documented limit (%s): %s", c, l, d)
				continue
			}
			real++
			t.Errorf("%v: %s", c, d)
		}
		if real > 0 {
			failed++
		}
		for _, feat := range append([]string{"all"}, c.features...) {
			n := perFeature[feat]
			n[0]++
			if real > 0 {
				n[1]++
			}
			perFeature[feat] = n
		}
	}
	for _, feat := range slices.Sorted(maps.Keys(perFeature)) {
		t.Logf("%-26s %4d servers, %d with a disagreement", feat, perFeature[feat][0], perFeature[feat][1])
	}
	t.Logf("%d servers from seed %d, %d with a disagreement (and %d documented limits met); s_server exited in %d more; s_client overruled sslscan %d times",
		ran, *tlsDiffSeed, failed, limited, peerExits, overruled)
}
