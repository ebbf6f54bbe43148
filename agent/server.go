package agent

import (
	"bytes"
	"context"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/gpuhost/gpuhost/internal/userfile"
)

// maxToken bounds the token file: a bearer token is a line, not a document.
const maxToken = 4096

func readToken(path string) ([]byte, error) {
	b, err := userfile.Read(path, maxToken)
	if err != nil {
		return nil, fmt.Errorf("reading --token-file: %w", err)
	}
	if len(b) > maxToken {
		return nil, fmt.Errorf("--token-file %s: larger than %d bytes", path, maxToken)
	}
	tok := bytes.TrimSpace(b)
	if len(tok) == 0 {
		return nil, fmt.Errorf("--token-file %s: empty", path)
	}
	return tok, nil
}

// Handler returns the agent's HTTP endpoints: /metrics, /healthz and
// /api/v1/runs/latest. Every endpoint but /healthz needs the bearer token
// when one is configured, so a kubelet probe needs no secret.
func (a *Agent) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", a.auth(promhttp.HandlerFor(a.metrics.reg, promhttp.HandlerOpts{})))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		err := a.health()
		a.mu.Lock()
		st := a.store
		a.mu.Unlock()
		if err == nil && st != nil {
			// The last insert may have worked and the disk since gone
			// read-only: probe now.
			ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
			if werr := st.Writable(ctx); werr != nil {
				err = fmt.Errorf("history database: %w", werr)
			}
			cancel()
		}
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "unhealthy:", err)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("GET /api/v1/runs/latest", a.auth(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		latest, st := a.latest, a.store
		a.mu.Unlock()
		if latest == nil && st != nil {
			// Restarted and not yet run: the history still has the last report.
			b, err := st.LatestReport(r.Context())
			if err != nil && !errors.Is(err, ErrNoRun) {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			latest = b
		}
		if latest == nil {
			http.Error(w, "no report yet", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(latest)
	})))
	return mux
}

func (a *Agent) auth(next http.Handler) http.Handler {
	if a.cfg.TokenFile == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, err := a.creds.currentToken()
		if err != nil {
			http.Error(w, "no token to check against", http.StatusServiceUnavailable)
			return
		}
		want := append([]byte("Bearer "), tok...)
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gpuhost"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// tlsConfig is the listener's TLS configuration: TLS 1.3 only, the version
// our own policies demand of the hosts we scan, with the certificate read
// again on each handshake after its files change.
func (a *Agent) tlsConfig() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
		return a.creds.certificate()
	}}
}

func (a *Agent) listen() (*http.Server, net.Listener, error) {
	srv := &http.Server{
		Handler:           a.Handler(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    16 << 10,
		ErrorLog:          slog.NewLogLogger(a.log.Handler(), slog.LevelDebug),
	}
	var ln net.Listener
	var err error
	ln, err = net.Listen("tcp", a.cfg.Listen)
	if err != nil {
		return nil, nil, fmt.Errorf("agent: listening on %s: %w", a.cfg.Listen, err)
	}
	if a.cfg.TLSCert != "" {
		cfg := a.tlsConfig()
		srv.TLSConfig = cfg
		ln = tls.NewListener(ln, cfg)
	}
	a.mu.Lock()
	a.addr = ln.Addr().String()
	a.mu.Unlock()
	return srv, ln, nil
}

// Addr is the address the agent listens on, once Run has started serving.
func (a *Agent) Addr() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.addr
}

func (a *Agent) serve(ctx context.Context, srv *http.Server, ln net.Listener) error {
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("agent: serving: %w", err)
	}
	return nil
}
