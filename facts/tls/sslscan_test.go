package tls

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

// accepts is what a listener accepts, as the probe or sslscan sees it:
// versions by OpenSSL's names, suites by IANA name per version, and the
// TLS 1.3 groups, each sorted.
type accepts struct {
	protocols []string
	suites    map[string][]string
	groups    []string
	// dhBits is the prime size of each DHE suite ("TLSv1.2 NAME"), and
	// curves12 the ECDHE curves at TLS 1.2, sorted: sslscan's, and the
	// probe's where it read them.
	dhBits   map[string]int
	curves12 []string
}

func (a accepts) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "protocols %v, groups %v", a.protocols, a.groups)
	for _, v := range slices.Sorted(maps.Keys(a.suites)) {
		fmt.Fprintf(&b, "\n  %s: %s", v, strings.Join(a.suites[v], " "))
	}
	return b.String()
}

func (a accepts) equal(b accepts) bool {
	return slices.Equal(a.protocols, b.protocols) && slices.Equal(a.groups, b.groups) &&
		maps.EqualFunc(a.suites, b.suites, slices.Equal)
}

func probeAccepts(p facts.TLSProbe) accepts {
	a := accepts{protocols: slices.Clone(p.Protocols), suites: map[string][]string{}, groups: slices.Clone(p.Groups), dhBits: map[string]int{}}
	for _, s := range p.Suites {
		a.suites[s.Protocol] = append(a.suites[s.Protocol], s.Name)
		if s.DHBits > 0 {
			a.dhBits[s.Protocol+" "+s.Name] = s.DHBits
		}
	}
	for _, c := range p.Curves {
		if c.Protocol == "TLSv1.2" {
			a.curves12 = append(a.curves12, c.Name)
		}
	}
	slices.Sort(a.curves12)
	for v := range a.suites {
		slices.Sort(a.suites[v])
	}
	slices.Sort(a.protocols)
	slices.Sort(a.groups)
	return a
}

var (
	ianaOnce  sync.Once
	ianaNames map[string]string
)

// ianaName maps OpenSSL's name of a suite to IANA's, which the probe
// records and sslscan prints only for suites OpenSSL lacks.
func ianaName(t *testing.T, name string) string {
	t.Helper()
	if strings.HasPrefix(name, "TLS_") {
		return name
	}
	if n, ok := ianaTable(t)[name]; ok {
		return n
	}
	t.Fatalf("sslscan named %q, which OpenSSL does not", name)
	return ""
}

// ianaTable maps every suite OpenSSL names to its IANA name, read once
// from openssl ciphers -stdname.
func ianaTable(t *testing.T) map[string]string {
	t.Helper()
	ianaOnce.Do(func() {
		out := testutil.Run(t, 30*time.Second, "openssl", "ciphers", "-stdname", "ALL:COMPLEMENTOFALL:@SECLEVEL=0")
		ianaNames = map[string]string{}
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) >= 3 && f[1] == "-" {
				ianaNames[f[2]] = f[0]
			}
		}
	})
	return ianaNames
}

// sslscanAccepts runs sslscan on the listener, with extra arguments such
// as --starttls-smtp, and reads its protocol
// lines ("TLSv1.2   enabled"), its accepted and preferred suites
// ("Accepted  TLSv1.2  256 bits  NAME") and its TLS 1.3 groups
// ("TLSv1.3  128 bits  secp256r1 (NIST P-256)").
func sslscanAccepts(t *testing.T, port int, extra ...string) (accepts, string) {
	t.Helper()
	sslscan := testutil.Tool(t, "sslscan", "sslscan")
	args := append([]string{"--no-colour", "--no-heartbleed", "--no-renegotiation", "--no-compression", "--no-fallback"}, extra...)
	out := testutil.Run(t, 120*time.Second, sslscan, append(args, "127.0.0.1:"+strconv.Itoa(port))...)
	a := accepts{suites: map[string][]string{}, dhBits: map[string]int{}}
	name := func(v string) string {
		if v == "TLSv1.0" {
			return "TLSv1"
		}
		return v
	}
	seen := 0
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && (f[1] == "enabled" || f[1] == "disabled"):
			seen++
			if f[1] == "enabled" && f[0] != "SSLv2" {
				a.protocols = append(a.protocols, name(f[0]))
			}
		case len(f) >= 5 && (f[0] == "Accepted" || f[0] == "Preferred") && f[3] == "bits":
			v, s := name(f[1]), ianaName(t, f[4])
			if !slices.Contains(a.suites[v], s) {
				a.suites[v] = append(a.suites[v], s)
			}
			// "DHE 2048 bits" after a DHE suite; an ECDHE one says
			// "Curve P-256 DHE 256".
			if len(f) >= 8 && f[5] == "DHE" && f[7] == "bits" && v != "TLSv1.3" {
				a.dhBits[v+" "+s], _ = strconv.Atoi(f[6])
			}
		case len(f) >= 4 && f[0] == "TLSv1.3" && f[2] == "bits":
			a.groups = append(a.groups, f[3])
		case len(f) >= 4 && f[0] == "TLSv1.2" && f[2] == "bits":
			a.curves12 = append(a.curves12, f[3])
		}
	}
	if seen != 6 {
		t.Fatalf("sslscan named %d of the 6 protocol versions:\n%s", seen, out)
	}
	for v := range a.suites {
		slices.Sort(a.suites[v])
	}
	slices.Sort(a.protocols)
	slices.Sort(a.groups)
	slices.Sort(a.curves12)
	return a, out
}

// agreeWithSslscan requires the probe and sslscan to see the same
// versions, suites and TLS 1.3 groups on the listener.
func agreeWithSslscan(t *testing.T, p facts.TLSProbe, port int, extra ...string) {
	t.Helper()
	want, out := sslscanAccepts(t, port, extra...)
	if got := probeAccepts(p); !got.equal(want) {
		t.Errorf("the probe sees\n%v\nsslscan sees\n%v\n%s", got, want, out)
	} else {
		t.Logf("the probe and sslscan agree: %v", got)
	}
}

// probeWildcard probes a loopback port listed as a wildcard listener, so
// that the internet-facing checks judge it.
func probeWildcard(t *testing.T, port int) facts.TLSProbe {
	t.Helper()
	f := listening(facts.Listener{Proto: "tcp", Address: "0.0.0.0", Port: port})
	if err := collectOne(t, collecttest.NewEnv(t, t.TempDir(), true), f, "tls_probe"); err != nil {
		t.Fatal(err)
	}
	if err := facts.Validate(*f); err != nil {
		t.Errorf("probe facts do not validate: %v", err)
	}
	if len(f.TLS.Probes) != 1 || f.TLS.Probes[0].Loopback {
		t.Fatalf("probes %+v, want one that is not loopback-only", f.TLS.Probes)
	}
	return f.TLS.Probes[0]
}

// Params the live checks are judged with: the shipped default, where TLS
// 1.2 is weak (GH-TLS-003 applies), and one that allows it (GH-TLS-006).
var (
	tls12Weak    = map[string]any{"weak_tls_protocols": []any{"SSLv2", "SSLv3", "TLSv1", "TLSv1.1", "TLSv1.2"}}
	tls12Allowed = map[string]any{"weak_tls_protocols": []any{"SSLv2", "SSLv3", "TLSv1", "TLSv1.1"}}
)

// verdict evaluates one probe check of the shipped pack (probe_tls12,
// probe_cipher_suites, ...) against the probe, and returns its deny and
// error messages, sorted.
func verdict(t *testing.T, p facts.TLSProbe, check string, params map[string]any) (deny, errs []string) {
	t.Helper()
	return verdictAll(t, []facts.TLSProbe{p}, check, params)
}

// verdictAll is verdict over several probes.
func verdictAll(t *testing.T, probes []facts.TLSProbe, check string, params map[string]any) (deny, errs []string) {
	t.Helper()
	doc := map[string]any{"target": map[string]any{"kind": "host", "scanned_at": "2026-01-01T00:00:00Z"},
		"tls": map[string]any{"nginx": []any{}, "probes": probes}}
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	var input any
	if err := json.Unmarshal(raw, &input); err != nil {
		t.Fatal(err)
	}
	opts := []func(*rego.Rego){
		rego.Query(fmt.Sprintf("d := data.gpuhost.tls.%s.deny; e := data.gpuhost.tls.%s.error", check, check)),
		rego.Input(input),
		rego.Store(inmem.NewFromObject(map[string]any{"gpuhost": map[string]any{"params": params}})),
	}
	for _, name := range []string{"probe_lib.rego", check + ".rego"} {
		src, err := fs.ReadFile(facts.Rego, "tls/tls/"+name)
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, rego.Module(name, string(src)))
	}
	rs, err := rego.New(opts...).Eval(context.Background())
	if err != nil || len(rs) != 1 {
		t.Fatalf("evaluating %s: %v %v", check, rs, err)
	}
	strs := func(v any) []string {
		var out []string
		for _, m := range v.([]any) {
			out = append(out, m.(string))
		}
		slices.Sort(out)
		return out
	}
	return strs(rs[0].Bindings["d"]), strs(rs[0].Bindings["e"])
}
