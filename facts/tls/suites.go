package tls

import (
	"github.com/gpuhost/gpuhost/facts"
	"slices"
	"strings"
	"sync"
)

// Protocol versions as they travel in a hello.
const (
	versionSSL30 uint16 = 0x0300
	versionTLS10 uint16 = 0x0301
	versionTLS11 uint16 = 0x0302
	versionTLS12 uint16 = 0x0303
	versionTLS13 uint16 = 0x0304
)

// probeVersions are the versions each listener is asked for, newest first:
// the certificate is taken from the newest version that shows one.
var probeVersions = []uint16{versionTLS13, versionTLS12, versionTLS11, versionTLS10, versionSSL30}

// protocolName is a version as OpenSSL and nginx configuration spell it,
// which is also how params.weak_tls_protocols names them.
func protocolName(v uint16) string {
	switch v {
	case versionSSL30:
		return "SSLv3"
	case versionTLS10:
		return "TLSv1"
	case versionTLS11:
		return "TLSv1.1"
	case versionTLS12:
		return "TLSv1.2"
	case versionTLS13:
		return "TLSv1.3"
	}
	return versionName(v)
}

// suite is one registry entry taken apart: the IANA name spells out the key
// exchange, the cipher and the MAC, so the classes are read from it rather
// than kept by hand beside it.
type suite struct {
	id   uint16
	name string
	// kex is the name's key exchange and authentication part ("ECDHE_RSA",
	// "RSA", "DH_anon"); empty for TLS 1.3 suites, which leave the key
	// exchange to the group.
	kex    string
	cipher string // "AES_128_GCM", "RC4_128", "3DES_EDE_CBC", "NULL"
	mac    string // "AEAD", "SHA1", "SHA256", "SHA384", "MD5"
	tls13  bool

	forwardSecret, aead, cbc, rc4, tripleDES, des, null, anonymous, export bool
}

// weak reports whether GH-TLS-006 names the suite.
func (s suite) weak() bool {
	return !s.forwardSecret || !s.aead || s.rc4 || s.tripleDES || s.des || s.null || s.anonymous || s.export
}

func (s suite) fact(version uint16) facts.TLSSuite {
	return facts.TLSSuite{
		Name: s.name, Protocol: protocolName(version), KeyExchange: s.kex, Cipher: s.cipher, MAC: s.mac,
		ForwardSecrecy: s.forwardSecret, AEAD: s.aead, CBC: s.cbc, RC4: s.rc4, TripleDES: s.tripleDES,
		DES: s.des, Null: s.null, Anonymous: s.anonymous, Export: s.export,
	}
}

// describe takes an IANA suite name apart. TLS 1.3 names carry no "_WITH_":
// TLS_<cipher>_<hash>; the rest are TLS_<kex>_WITH_<cipher>[_<mac>], where
// the trailing hash of an AEAD suite is its PRF, not a MAC.
func describe(id uint16, name string) suite {
	s := suite{id: id, name: name}
	rest := strings.TrimPrefix(name, "TLS_")
	kex, cipher, with := strings.Cut(rest, "_WITH_")
	if !with {
		s.tls13, cipher = true, kex
		kex = ""
	}
	s.kex = kex
	mac := ""
	if i := strings.LastIndexByte(cipher, '_'); i > 0 {
		switch tail := cipher[i+1:]; tail {
		case "SHA", "SHA256", "SHA384", "MD5", "SM3":
			cipher, mac = cipher[:i], tail
		}
	}
	if mac == "SHA" {
		mac = "SHA1"
	}
	// RFC 9150's integrity-only TLS 1.3 suites are named by their HMAC
	// twice: TLS_SHA256_SHA256.
	if s.tls13 && (cipher == "SHA256" || cipher == "SHA384") {
		cipher = "NULL"
	}
	s.cipher = cipher
	s.aead = strings.Contains(cipher, "GCM") || strings.Contains(cipher, "CCM") || strings.Contains(cipher, "POLY1305")
	if s.aead {
		mac = "AEAD"
	}
	s.mac = mac
	s.cbc = strings.Contains(cipher, "CBC")
	s.rc4 = strings.HasPrefix(cipher, "RC4")
	s.tripleDES = strings.HasPrefix(cipher, "3DES")
	s.des = strings.HasPrefix(cipher, "DES")
	s.null = cipher == "NULL"
	parts := strings.Split(kex, "_")
	s.anonymous = slices.Contains(parts, "anon")
	s.export = slices.Contains(parts, "EXPORT")
	// Ephemeral keys: (EC)DHE, TLS 1.3, anonymous DH (unauthenticated, but
	// fresh each time) and the password-authenticated ECCPWD.
	s.forwardSecret = s.tls13 || s.anonymous || kex == "ECCPWD" ||
		slices.Contains(parts, "DHE") || slices.Contains(parts, "ECDHE")
	return s
}

var (
	suiteOnce sync.Once
	suiteByID map[uint16]suite
	suites12  []uint16 // every suite a TLS 1.2-or-older hello offers
	suites13  []uint16 // every suite a TLS 1.3 hello offers
)

func loadSuites() {
	suiteOnce.Do(func() {
		suiteByID = make(map[uint16]suite, len(suiteRows))
		for _, r := range suiteRows {
			s := describe(r.id, r.name)
			suiteByID[r.id] = s
			if s.tls13 {
				suites13 = append(suites13, r.id)
			} else {
				suites12 = append(suites12, r.id)
			}
		}
	})
}

// suiteOf returns the registry entry of id, or one named by its code point
// when the registry (as this table holds it) has none.
func suiteOf(id uint16) suite {
	loadSuites()
	if s, ok := suiteByID[id]; ok {
		return s
	}
	return describe(id, "0x"+hex4(id))
}

// offeredSuites are the suites a hello at version offers before any is
// taken away: SSLv3 to TLS 1.2 share one list, since a server picks only
// what its version allows and a suite the version cannot carry costs two
// bytes; TLS 1.3 has its own.
func offeredSuites(version uint16) []uint16 {
	loadSuites()
	if version == versionTLS13 {
		return slices.Clone(suites13)
	}
	return slices.Clone(suites12)
}

func hex4(v uint16) string {
	const digits = "0123456789abcdef"
	return string([]byte{digits[v>>12], digits[v>>8&15], digits[v>>4&15], digits[v&15]})
}

// Named groups (IANA TLS Supported Groups, tls-parameters-8).
const (
	groupSecp256r1 uint16 = 0x0017
	groupSecp384r1 uint16 = 0x0018
	groupSecp521r1 uint16 = 0x0019
	groupX25519    uint16 = 0x001d
	groupX448      uint16 = 0x001e
	groupFFDHE2048 uint16 = 0x0100
	groupFFDHE3072 uint16 = 0x0101
	groupFFDHE4096 uint16 = 0x0102
	groupFFDHE6144 uint16 = 0x0103
	groupFFDHE8192 uint16 = 0x0104
	groupX25519ML  uint16 = 0x11ec
)

// groupRows are the groups a TLS 1.3 hello offers, enumerated one by one.
var groupRows = []struct {
	id   uint16
	name string
}{
	{groupSecp256r1, "secp256r1"},
	{groupSecp384r1, "secp384r1"},
	{groupSecp521r1, "secp521r1"},
	{groupX25519, "x25519"},
	{groupX448, "x448"},
	{0x001f, "brainpoolP256r1tls13"},
	{0x0020, "brainpoolP384r1tls13"},
	{0x0021, "brainpoolP512r1tls13"},
	{groupFFDHE2048, "ffdhe2048"},
	{groupFFDHE3072, "ffdhe3072"},
	{groupFFDHE4096, "ffdhe4096"},
	{groupFFDHE6144, "ffdhe6144"},
	{groupFFDHE8192, "ffdhe8192"},
	{0x0200, "MLKEM512"},
	{0x0201, "MLKEM768"},
	{0x0202, "MLKEM1024"},
	{0x11eb, "SecP256r1MLKEM768"},
	{groupX25519ML, "X25519MLKEM768"},
	{0x11ed, "SecP384r1MLKEM1024"},
}

func groupName(id uint16) string {
	for _, g := range groupRows {
		if g.id == id {
			return g.name
		}
	}
	return "0x" + hex4(id)
}

func offeredGroups() []uint16 {
	out := make([]uint16, len(groupRows))
	for i, g := range groupRows {
		out[i] = g.id
	}
	return out
}

// legacyCurves are the elliptic curves a TLS 1.2-or-older hello names
// (sect163k1 to x448), so that a server with any curve can pick ECDHE. The
// ffdhe groups stay out: RFC 7919 bids a server that sees them, and has
// none of them, to refuse every DHE suite, which would hide DHE on a server
// with its own DH parameters.
var legacyCurves = func() []uint16 {
	var out []uint16
	for id := uint16(1); id <= groupX448; id++ {
		out = append(out, id)
	}
	return out
}()
