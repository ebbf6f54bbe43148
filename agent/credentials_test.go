package agent

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/reports"
)

// Rotating the certificate and the token under a running agent: the next
// handshake serves the new certificate, the old token stops working, the
// metrics say what is served; a broken rotation keeps the last good pair.
func TestCredentialsRotateWithoutRestart(t *testing.T) {
	dir := t.TempDir()
	ca := testutil.NewCA(t)
	firstAfter := time.Now().Add(30 * 24 * time.Hour).Truncate(time.Second)
	certFile, keyFile, _ := testutil.WriteCert(t, dir, testutil.CertSpec{CA: ca, NotAfter: firstAfter, IPs: localIPs()})
	tokFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokFile, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := newAgent(t, Config{Listen: "127.0.0.1:0", TLSCert: certFile, TLSKey: keyFile, TokenFile: tokFile})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	waitFor(t, "the listener", func() bool { return a.Addr() != "" })
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}, DisableKeepAlives: true,
	}}
	get := func(token string) (int, *x509.Certificate) {
		t.Helper()
		req, _ := http.NewRequest("GET", "https://"+a.Addr()+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET /metrics: %v", err)
		}
		resp.Body.Close()
		return resp.StatusCode, resp.TLS.PeerCertificates[0]
	}
	code, served := get("first")
	if code != 200 || !served.NotAfter.Equal(firstAfter) {
		t.Fatalf("before rotation: %d, serving a certificate until %s", code, served.NotAfter)
	}
	if got := gauge(t, a, "gpuhost_agent_tls_certificate_not_after_timestamp_seconds"); got != float64(firstAfter.Unix()) {
		t.Errorf("not_after gauge %v, want %d", got, firstAfter.Unix())
	}

	// Rotate as cert-manager and most tools do: new files renamed in.
	next := t.TempDir()
	secondAfter := time.Now().Add(90 * 24 * time.Hour).Truncate(time.Second)
	secondBefore := time.Now().Add(-time.Hour).Truncate(time.Second)
	newCert, newKey, _ := testutil.WriteCert(t, next, testutil.CertSpec{CA: ca, NotAfter: secondAfter, NotBefore: secondBefore, IPs: localIPs()})
	for from, to := range map[string]string{newCert: certFile, newKey: keyFile} {
		if err := os.Rename(from, to); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(tokFile+".new", []byte("second\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tokFile+".new", tokFile); err != nil {
		t.Fatal(err)
	}
	if code, _ := get("first"); code != 401 {
		t.Errorf("the rotated-out token: %d, want 401", code)
	}
	code, served = get("second")
	if code != 200 || !served.NotAfter.Equal(secondAfter) {
		t.Fatalf("after rotation: %d, serving a certificate until %s, want %s", code, served.NotAfter, secondAfter)
	}
	if got := gauge(t, a, "gpuhost_agent_tls_certificate_not_before_timestamp_seconds"); got != float64(secondBefore.Unix()) {
		t.Errorf("not_before gauge %v, want %d", got, secondBefore.Unix())
	}

	// A half-written rotation: the key no longer matches. The last good
	// pair keeps serving and the failure is counted.
	if err := os.WriteFile(keyFile, []byte("not a key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, served = get("second")
	if code != 200 || !served.NotAfter.Equal(secondAfter) {
		t.Errorf("after a broken rotation: %d, serving until %s", code, served.NotAfter)
	}
	if got := counter(t, a, "gpuhost_agent_credential_reload_errors_total", "tls"); got != 1 {
		t.Errorf("tls reload errors %v, want 1", got)
	}
}

func TestCredentialsMustLoadAtStart(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "cert.pem")
	if err := os.WriteFile(bad, []byte("nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{Scan: sampleScan, DBPath: filepath.Join(dir, "h.db"), Interval: time.Hour, TLSCert: bad, TLSKey: bad}); err == nil {
		t.Error("an agent started with a certificate that does not load")
	}
}

func sampleScan(context.Context) (*reports.Report, error) { return sampleReport("pass"), nil }

func localIPs() []net.IP { return []net.IP{net.ParseIP("127.0.0.1")} }

// gauge reads one unlabelled metric from the agent's registry.
func gauge(t *testing.T, a *Agent, name string) float64 {
	t.Helper()
	mf, ok := scrapeRegistry(t, a)[name]
	if !ok || len(mf.Metric) != 1 {
		t.Fatalf("metric %s not exported", name)
	}
	return mf.Metric[0].GetGauge().GetValue()
}

// counter reads the series of a counter whose one label has value label.
func counter(t *testing.T, a *Agent, name, label string) float64 {
	t.Helper()
	for _, m := range scrapeRegistry(t, a)[name].GetMetric() {
		if len(m.Label) == 1 && m.Label[0].GetValue() == label {
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("metric %s{%s} not exported", name, label)
	return 0
}

func scrapeRegistry(t *testing.T, a *Agent) map[string]*dto.MetricFamily {
	t.Helper()
	mfs, err := a.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, mf := range mfs {
		out[mf.GetName()] = mf
	}
	return out
}
