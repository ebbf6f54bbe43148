package tls

import (
	"context"
	"errors"
	"flag"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// collect runs the tls collector over dir alone and returns the document and
// its error.
func gather(t testing.TB, dir string) (*facts.Facts, map[string]error) {
	t.Helper()
	got, err := Collect(context.Background(), &collect.Env{FS: collecttest.OpenFS(t, dir)}, nil, nil)
	f := newDoc(facts.KindRootfs)
	f.TLS = got
	return f, map[string]error{"tls": err}
}

// golden compares the facts this package fills, under their document
// key, with testdata/golden/NAME.json.
func golden(t *testing.T, name, root string, f *facts.Facts) {
	t.Helper()
	collecttest.GoldenTree(t, name, root, map[string]any{"tls": f.TLS}, *update)
}

func TestHardenedTree(t *testing.T) {
	root := filepath.Join("testdata", "hardened")
	f, errs := gather(t, root)
	for name, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	fsys := collecttest.OpenFS(t, root)
	if f.TLS == nil || f.TLS.OpenSSL == nil {
		t.Fatal("tls.openssl not filled")
	}
	if got := *f.TLS.OpenSSL; got.MinProtocol != "TLSv1.3" || got.MaxProtocol != "" ||
		got.CipherSuites != "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256" ||
		got.ConfigPath != fsys.Display("/etc/ssl/openssl.cnf") {
		t.Errorf("openssl = %+v", got)
	}
	wantNginx := []facts.NginxTLS{{File: fsys.Display("/etc/nginx/nginx.conf"), Line: 30, Protocols: []string{"TLSv1.3"}}}
	if !equalNginx(f.TLS.Nginx, wantNginx) {
		t.Errorf("nginx = %+v, want %+v", f.TLS.Nginx, wantNginx)
	}
	if f.TLS.Probes == nil || len(f.TLS.Probes) != 0 {
		t.Errorf("probes = %v, want empty", f.TLS.Probes)
	}

	golden(t, "hardened", root, f)
}

func TestWeakTree(t *testing.T) {
	root := filepath.Join("testdata", "weak")
	f, errs := gather(t, root)
	for name, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	fsys := collecttest.OpenFS(t, root)
	if o := f.TLS.OpenSSL; o == nil || o.MinProtocol != "TLSv1.2" {
		t.Errorf("openssl = %+v", o)
	}
	wantNginx := []facts.NginxTLS{
		{File: fsys.Display("/etc/nginx/nginx.conf"), Line: 21, Protocols: []string{"TLSv1", "TLSv1.1", "TLSv1.2"}},
		{File: fsys.Display("/etc/nginx/conf.d/jupyter.conf"), Line: 7, Protocols: []string{"TLSv1.2"}},
		// The stream server listens with ssl and inherits no ssl_protocols.
		{File: fsys.Display("/etc/nginx/nginx.conf"), Line: 36, Protocols: []string{"TLSv1.2", "TLSv1.3"}},
	}
	if !equalNginx(f.TLS.Nginx, wantNginx) {
		t.Errorf("nginx = %+v, want %+v", f.TLS.Nginx, wantNginx)
	}
	golden(t, "weak", root, f)
}

func equalNginx(a, b []facts.NginxTLS) bool {
	return slices.EqualFunc(a, b, func(x, y facts.NginxTLS) bool {
		return x.File == y.File && x.Line == y.Line && slices.Equal(x.Protocols, y.Protocols)
	})
}

func TestTLSKeepsProbes(t *testing.T) {
	env := &collect.Env{FS: collecttest.OpenFS(t, t.TempDir())}
	f := newDoc(facts.KindRootfs)
	f.TLS = &facts.TLS{Probes: []facts.TLSProbe{{Address: "127.0.0.1:443"}}}
	if err := collectOne(t, env, f, "tls"); err != nil {
		t.Fatal(err)
	}
	if len(f.TLS.Probes) != 1 {
		t.Errorf("probes = %v: the prober's results were dropped", f.TLS.Probes)
	}
}

func TestOpenSSLBrokenChain(t *testing.T) {
	dir := collecttest.TempTree(t, map[string]string{
		"/etc/ssl/openssl.cnf": "openssl_conf = init\n[init]\nssl_conf = missing_sect\n[system_default_sect]\nMinProtocol = TLSv1.3\n",
	})
	o, err := CollectOpenSSL(collecttest.OpenFS(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if o == nil || o.MinProtocol != "" {
		t.Errorf("openssl = %+v: a broken chain sets nothing", o)
	}
}

func TestFIFOInsteadOfNginxConf(t *testing.T) {
	dir := collecttest.TempTree(t, map[string]string{"/etc/nginx/.keep": ""})
	fifo := filepath.Join(dir, "etc", "nginx", "nginx.conf")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	_, errs := gather(t, dir)
	err := errs["tls"]
	if !errors.Is(err, sysroot.ErrNotRegular) || !strings.Contains(err.Error(), "nginx.conf") {
		t.Errorf("tls over a FIFO: %v, want a not-regular error naming the file", err)
	}
}

func TestEmptyRoot(t *testing.T) {
	f, errs := gather(t, t.TempDir())
	if errs["tls"] != nil {
		t.Fatalf("tls: %v", errs["tls"])
	}
	if f.TLS == nil || f.TLS.OpenSSL != nil || f.TLS.Nginx == nil || len(f.TLS.Nginx) != 0 {
		t.Errorf("tls = %+v, want no openssl and an empty nginx list", f.TLS)
	}
}

func TestIncludeCycles(t *testing.T) {
	dir := collecttest.TempTree(t, map[string]string{
		"/etc/ssl/openssl.cnf":  ".include /etc/ssl/a.cnf\n",
		"/etc/ssl/a.cnf":        ".include b.cnf\n",
		"/etc/ssl/b.cnf":        ".include = a.cnf\n",
		"/etc/nginx/nginx.conf": "include a.conf;\n",
		"/etc/nginx/a.conf":     "include b.conf;\n",
		"/etc/nginx/b.conf":     "include a.conf;\n",
	})
	fsys := collecttest.OpenFS(t, dir)
	if _, err := LoadOpenSSL(fsys, OpenSSLConfigPath); err == nil || !strings.Contains(err.Error(), "deeper") {
		t.Errorf("openssl cycle: %v", err)
	}
	if _, err := LoadNginx(fsys, NginxConfigPath); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("nginx cycle: %v", err)
	}
}
