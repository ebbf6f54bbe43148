package agent

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// stamp identifies one version of a file: a rotation that renames a new
// file into place changes the inode, one that rewrites it the size or the
// modification time.
type stamp struct {
	dev, ino uint64
	size     int64
	mtime    time.Time
}

func stampOf(path string) (stamp, error) {
	info, err := os.Stat(path)
	if err != nil {
		return stamp{}, err
	}
	s := stamp{size: info.Size(), mtime: info.ModTime()}
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		s.dev, s.ino = uint64(st.Dev), st.Ino
	}
	return s, nil
}

// credentials are the listener's certificate and the bearer token, read
// again whenever their files change, so that rotating them needs no
// restart. A new pair or token that does not load leaves the last good
// one serving, and says so in the log and in the reload error counter.
type credentials struct {
	certFile, keyFile, tokenFile string
	log                          *slog.Logger
	m                            *metrics

	mu                  sync.Mutex
	certTried, keyTried stamp
	cert                *tls.Certificate
	tokenTried          stamp
	token               []byte
}

// newCredentials loads what cfg names; failing to load either at start is
// an error, as before rotation existed.
func newCredentials(cfg Config, log *slog.Logger, m *metrics) (*credentials, error) {
	c := &credentials{certFile: cfg.TLSCert, keyFile: cfg.TLSKey, tokenFile: cfg.TokenFile, log: log, m: m}
	if c.certFile != "" {
		if _, err := c.certificate(); err != nil {
			return nil, err
		}
	}
	if c.tokenFile != "" {
		if _, err := c.currentToken(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// certificate returns the pair to serve, loading it again when either file
// changed since it was last tried.
func (c *credentials) certificate() (*tls.Certificate, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cs, cerr := stampOf(c.certFile)
	ks, kerr := stampOf(c.keyFile)
	if cerr == nil && kerr == nil && c.cert != nil && cs == c.certTried && ks == c.keyTried {
		return c.cert, nil
	}
	if cerr == nil && kerr == nil && (cs != c.certTried || ks != c.keyTried) {
		c.certTried, c.keyTried = cs, ks
		pair, err := tls.LoadX509KeyPair(c.certFile, c.keyFile)
		if err == nil {
			leaf := pair.Leaf
			if leaf == nil {
				leaf, err = x509.ParseCertificate(pair.Certificate[0])
			}
			if err == nil {
				c.cert = &pair
				c.m.certNotBefore.Set(float64(leaf.NotBefore.Unix()))
				c.m.certNotAfter.Set(float64(leaf.NotAfter.Unix()))
				if c.m.certLoaded {
					c.log.Info("agent: serving a new TLS certificate", "file", c.certFile, "not_after", leaf.NotAfter.UTC().Format(time.RFC3339))
				}
				c.m.certLoaded = true
				return c.cert, nil
			}
		}
		err = fmt.Errorf("loading --tls-cert/--tls-key: %w", err)
		if c.cert == nil {
			return nil, err
		}
		c.m.reloadErrors.WithLabelValues("tls").Inc()
		c.log.Error("agent: the changed TLS certificate does not load; still serving the previous one", "err", err)
		return c.cert, nil
	}
	if c.cert == nil {
		return nil, fmt.Errorf("loading --tls-cert/--tls-key: %w", firstErr(cerr, kerr))
	}
	// A file gone mid-rotation: keep serving what was loaded.
	return c.cert, nil
}

// currentToken returns the bearer token, read again when its file changed.
func (c *credentials) currentToken() ([]byte, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, err := stampOf(c.tokenFile)
	if err == nil && s == c.tokenTried && c.token != nil {
		return c.token, nil
	}
	if err == nil {
		c.tokenTried = s
		tok, rerr := readToken(c.tokenFile)
		if rerr == nil {
			if c.token != nil {
				c.log.Info("agent: using a new bearer token", "file", c.tokenFile)
			}
			c.token = tok
			return tok, nil
		}
		err = rerr
	}
	if c.token == nil {
		return nil, err
	}
	c.m.reloadErrors.WithLabelValues("token").Inc()
	c.log.Error("agent: the changed token file does not load; still using the previous token", "err", err)
	return c.token, nil
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// credentialMetrics are the gauges of the certificate served and the
// counter of reloads that failed, by what ("tls", "token").
func credentialMetrics(m *metrics) []prometheus.Collector {
	m.certNotBefore = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "gpuhost_agent_tls_certificate_not_before_timestamp_seconds", Help: "Unix time the certificate the agent serves became valid: its age is time() minus this.",
	})
	m.certNotAfter = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "gpuhost_agent_tls_certificate_not_after_timestamp_seconds", Help: "Unix time the certificate the agent serves expires.",
	})
	m.reloadErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gpuhost_agent_credential_reload_errors_total", Help: "Changed credential files that did not load, by kind (tls, token); the previous ones kept serving.",
	}, []string{"kind"})
	for _, k := range []string{"tls", "token"} {
		m.reloadErrors.WithLabelValues(k)
	}
	return []prometheus.Collector{m.certNotBefore, m.certNotAfter, m.reloadErrors}
}
