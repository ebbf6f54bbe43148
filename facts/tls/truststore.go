package tls

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"

	"github.com/gpuhost/gpuhost/facts/collect/textfile"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// The trust store a chain is verified against is the target's own CA
// bundle, read inside the target's root like every file a collector reads:
// what the host's own clients (curl, apt, Go programs, Python) trust, and
// where a site installs its private CA (update-ca-certificates on Debian
// and Ubuntu, update-ca-trust on Fedora and RHEL) for them.
//
// A bundle named in params is not used: params reach the checks, never the
// collectors (a facts document is collected once and may be judged later
// with other params), and a check cannot verify a signature, nor should it
// read a clock, so the verdict on trust has to be the collector's, made at
// the probe's time. A site whose clients trust a CA the host does not puts
// that CA in the host's bundle, or waives GH-TLS-008 for the listener.

// trustPaths are where Linux distributions keep the system CA bundle, in
// the order Go's crypto/x509 looks for them (root_linux.go); the first one
// there is the store, as it is for Go.
var trustPaths = []string{
	"/etc/ssl/certs/ca-certificates.crt",                // Debian, Ubuntu, Gentoo, Arch
	"/etc/pki/tls/certs/ca-bundle.crt",                  // Fedora, RHEL 6
	"/etc/ssl/ca-bundle.pem",                            // openSUSE
	"/etc/pki/tls/cacert.pem",                           // OpenELEC
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", // CentOS, RHEL 7
	"/etc/ssl/cert.pem",                                 // Alpine
}

// maxTrustBundle bounds the bundle read: Debian's is about 220 KB for some
// 150 CAs.
const maxTrustBundle = 4 << 20

// trustStore is the target's CA bundle, parsed once for every listener.
type trustStore struct {
	display string // where it is inside the target; "" when no path is there
	err     string // why it cannot be used; roots is nil then
	roots   *x509.CertPool
	// bySubject holds the roots by their raw subject, to find the one
	// that issued the last certificate a server sent.
	bySubject map[string][]*x509.Certificate
}

// loadTrustStore reads the first of trustPaths that the target has. PEM
// blocks that are no certificate, or one that does not parse, are passed
// over, as OpenSSL and Go pass them over; a bundle with none at all is no
// store.
func loadTrustStore(fsys sysroot.FS) *trustStore {
	for _, p := range trustPaths {
		data, ok, err := textfile.ReadOptionalLimit(fsys, p, maxTrustBundle)
		if !ok && err == nil {
			continue
		}
		ts := &trustStore{display: fsys.Display(p)}
		if err != nil {
			ts.err = fmt.Sprintf("reading the CA bundle %s: %v", ts.display, err)
			return ts
		}
		ts.roots, ts.bySubject = x509.NewCertPool(), map[string][]*x509.Certificate{}
		for block, rest := pem.Decode(data); block != nil; block, rest = pem.Decode(rest) {
			if block.Type != "CERTIFICATE" {
				continue
			}
			c, err := x509.ParseCertificate(block.Bytes)
			if err != nil {
				continue
			}
			ts.roots.AddCert(c)
			ts.bySubject[string(c.RawSubject)] = append(ts.bySubject[string(c.RawSubject)], c)
		}
		if len(ts.bySubject) == 0 {
			ts.roots, ts.bySubject = nil, nil
			ts.err = fmt.Sprintf("the CA bundle %s holds no certificate", ts.display)
		}
		return ts
	}
	return &trustStore{err: "the target has no CA bundle at " + strings.Join(trustPaths, ", ")}
}
