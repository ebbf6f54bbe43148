package tls

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// stapling is whether a server stapled an OCSP response to its
// certificate when the probe asked for one; known is false where the
// probe could not tell (its own ffdhe handshake does not ask).
type stapling struct{ known, stapled bool }

// goGroups are the TLS 1.3 groups Go's client keys, by code point.
var goGroups = map[uint16]tls.CurveID{
	groupX25519:    tls.X25519,
	groupSecp256r1: tls.CurveP256,
	groupSecp384r1: tls.CurveP384,
	groupSecp521r1: tls.CurveP521,
	groupX25519ML:  tls.X25519MLKEM768,
	0x11eb:         tls.SecP256r1MLKEM768,
	0x11ed:         tls.SecP384r1MLKEM1024,
}

// goSuites13 are the TLS 1.3 suites Go's client offers, always all three.
var goSuites13 = []uint16{tls.TLS_AES_128_GCM_SHA256, tls.TLS_AES_256_GCM_SHA384, tls.TLS_CHACHA20_POLY1305_SHA256}

// certificate13 fetches a TLS 1.3 server's certificate chain, leaf first,
// which only a finished key exchange decrypts: with Go's client limited to the groups
// the server accepted where Go has one of them, else over an ffdhe group
// by the probe's own exchange. A server that accepts only what neither
// has (x448, the brainpool groups, CCM suites) is named as such.
func (pp *portProbe) certificate13(ctx context.Context, rt route, suites, groups []uint16, staple *stapling) ([]*x509.Certificate, error) {
	var curves []tls.CurveID
	for _, g := range groups {
		if c, ok := goGroups[g]; ok {
			curves = append(curves, c)
		}
	}
	goSuite := slices.ContainsFunc(suites, func(s uint16) bool { return slices.Contains(goSuites13, s) })
	if len(curves) > 0 && goSuite {
		return pp.goCertificate(ctx, rt, curves, staple)
	}
	for _, g := range groups {
		if ffdhePrime(g) == nil {
			continue
		}
		for _, s := range suites {
			if _, ok := aesGCMSuites13[s]; ok {
				return pp.ffdheCertificate(ctx, rt, g, s)
			}
		}
	}
	var gs, ss []string
	for _, g := range groups {
		gs = append(gs, groupName(g))
	}
	for _, s := range suites {
		ss = append(ss, suiteOf(s).name)
	}
	return nil, fmt.Errorf("the server accepts only groups %s with suites %s, which neither Go's client nor the probe can key",
		strings.Join(gs, ", "), strings.Join(ss, ", "))
}

// goCertificate runs Go's TLS 1.3 handshake limited to curves and keeps
// every certificate the server sent, which arrive before it could ask for
// a client certificate; a handshake that then fails still shows them.
// Go's own verification stays off: the probe wants the chain as sent,
// which chainFacts judges against the target's trust store.
func (pp *portProbe) goCertificate(ctx context.Context, rt route, curves []tls.CurveID, staple *stapling) ([]*x509.Certificate, error) {
	conn, release, err := pp.connect(ctx, rt.addr, 0, 0)
	if err != nil {
		return nil, err
	}
	defer release()
	var chain []*x509.Certificate
	c := tls.Client(conn, &tls.Config{
		MinVersion:       tls.VersionTLS13,
		MaxVersion:       tls.VersionTLS13,
		CurvePreferences: curves,
		ServerName:       rt.name,
		// The probe asks what certificate the port shows, not whom it
		// belongs to: the certificate is judged by policy, and no data
		// is sent.
		InsecureSkipVerify: true, //nolint:gosec // protocol probe, see above
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			var err error
			chain, err = parseChain(raw)
			return err
		},
		// Go's client asks for a stapled OCSP response in every hello;
		// what the server stapled is known once its certificate is.
		VerifyConnection: func(cs tls.ConnectionState) error {
			if staple != nil {
				*staple = stapling{known: true, stapled: len(cs.OCSPResponse) > 0}
			}
			return nil
		},
	})
	err = c.HandshakeContext(ctx)
	if chain != nil {
		return chain, nil
	}
	if err == nil {
		err = errors.New("the handshake finished without a certificate")
	}
	return nil, err
}
