package nodemark

import (
	"context"
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
)

// An API server that answers with a redirect, to plain HTTP on the same
// host, gets no token there: the marker follows no redirect and says so.
func TestTokenFollowsNoRedirect(t *testing.T) {
	var leaked atomic.Int32
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "" {
			leaked.Add(1)
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer plain.Close()
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, plain.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer api.Close()
	u, err := url.Parse(api.URL)
	if err != nil {
		t.Fatal(err)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", host)
	t.Setenv("KUBERNETES_SERVICE_PORT", port)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw})
	m, err := New("node-a", WithLabel(), WithServiceAccountDir(serviceAccount(t, "secret-token", string(ca))))
	if err != nil {
		t.Fatal(err)
	}
	err = m.Mark(context.Background(), []string{"GH-SSH-001"})
	if err == nil || !strings.Contains(err.Error(), "follows no redirect") {
		t.Errorf("Mark = %v, want the redirect refused", err)
	}
	if n := leaked.Load(); n != 0 {
		t.Errorf("the token reached the plain HTTP server %d times", n)
	}
}
