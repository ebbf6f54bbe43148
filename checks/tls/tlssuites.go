package tls

import (
	"context"
	"crypto/tls"
	"fmt"
	"slices"
	"strings"
)

// weakSuiteSets are the cipher suites a TLS 1.2 (or older) server must not
// agree to, by kind. Go's client offers none of the static-RSA ones by
// default, so they are listed explicitly; the classes follow the IANA
// names, which spell out the key exchange and the MAC.
var weakSuiteSets = [][]uint16{
	// No forward secrecy: the session key travels under the server's
	// long-term RSA key.
	suitesWhere(func(name string) bool { return strings.HasPrefix(name, "TLS_RSA_") }),
	// CBC with an HMAC-SHA1 record MAC (Lucky13 and friends).
	suitesWhere(func(name string) bool { return strings.HasSuffix(name, "_CBC_SHA") }),
}

// everySuite is what the version handshakes offer: a server that agrees
// only to a weak suite still accepts the version, and Go's default list
// leaves the static-RSA suites out.
var everySuite = suitesWhere(func(string) bool { return true })

func suitesWhere(keep func(string) bool) []uint16 {
	var out []uint16
	for _, s := range append(tls.CipherSuites(), tls.InsecureCipherSuites()...) {
		if keep(s.Name) && slices.Contains(s.SupportedVersions, tls.VersionTLS12) {
			out = append(out, s.ID)
		}
	}
	return out
}

// weakSuites lists, by name and sorted, every weak suite the server at addr
// agrees to at version. It offers each class and takes away the suite the
// server chose until the server refuses the rest, so a server that prefers
// its own order still shows all it would accept.
func (p *prober) weakSuites(ctx context.Context, addr string, version uint16) ([]string, error) {
	found := map[uint16]bool{}
	for _, set := range weakSuiteSets {
		offer := slices.DeleteFunc(slices.Clone(set), func(id uint16) bool { return found[id] })
		for len(offer) > 0 {
			a := p.handshake(ctx, addr, version, offer, 0)
			if !a.spoke && a.err != nil {
				return sortedSuiteNames(found), fmt.Errorf("%s cipher suites: %s", versionName(version), unreachable(a.err, p.timeout))
			}
			if a.err != nil || a.suite == 0 || !slices.Contains(offer, a.suite) {
				break
			}
			found[a.suite] = true
			offer = slices.DeleteFunc(offer, func(id uint16) bool { return id == a.suite })
		}
	}
	return sortedSuiteNames(found), nil
}

func sortedSuiteNames(ids map[uint16]bool) []string {
	names := []string{}
	for id := range ids {
		names = append(names, tls.CipherSuiteName(id))
	}
	slices.Sort(names)
	return names
}
