package tls

import (
	"crypto/rand"
	"fmt"
)

// Record and handshake types (RFC 8446, 5.1 and 4).
const (
	recordChangeCipherSpec uint8 = 20
	recordAlert            uint8 = 21
	recordHandshake        uint8 = 22
	recordApplicationData  uint8 = 23
	recordHeartbeat        uint8 = 24

	typeClientHello         uint8 = 1
	typeServerHello         uint8 = 2
	typeEncryptedExtensions uint8 = 8
	typeCertificate         uint8 = 11
	typeServerKeyExchange   uint8 = 12
	typeCertificateRequest  uint8 = 13
	typeServerHelloDone     uint8 = 14
	typeCertificateStatus   uint8 = 22
)

// Extensions the probe writes or reads.
const (
	extSupportedGroups     uint16 = 10
	extECPointFormats      uint16 = 11
	extSignatureAlgorithms uint16 = 13
	extPadding             uint16 = 21
	extServerName          uint16 = 0
	extStatusRequest       uint16 = 5
	extSupportedVersions   uint16 = 43
	extKeyShare            uint16 = 51
)

// scsvRenegotiation tells a server the client does secure renegotiation,
// which some refuse to handshake without.
const scsvRenegotiation uint16 = 0x00ff

// signatureSchemes are offered in TLS 1.2 and 1.3 hellos: every scheme a
// certificate in use may need, SHA-1 and DSA included, so that no suite is
// refused for want of a signature the probe would never verify.
var signatureSchemes = []uint16{
	0x0403, 0x0503, 0x0603, // ecdsa_secp256r1_sha256 .. secp521r1_sha512
	0x0807, 0x0808, // ed25519, ed448
	0x0804, 0x0805, 0x0806, // rsa_pss_rsae_sha256 .. sha512
	0x0809, 0x080a, 0x080b, // rsa_pss_pss_sha256 .. sha512
	0x081a, 0x081b, 0x081c, // ecdsa_brainpoolP256r1tls13_sha256 .. P512r1
	0x0401, 0x0501, 0x0601, // rsa_pkcs1_sha256 .. sha512
	0x0303, 0x0301, 0x0302, // sha224 with ECDSA, RSA, DSA
	0x0203, 0x0201, 0x0202, // sha1 with ECDSA, RSA, DSA
	0x0402, 0x0502, 0x0602, // dsa with sha256 .. sha512
	0x0904, 0x0905, 0x0906, // mldsa44, mldsa65, mldsa87
}

// keyShare is a client's key share for one group.
type keyShare struct {
	group uint16
	data  []byte
}

// clientHello is one hello the probe sends: a version asked for alone, the
// suites offered, and for TLS 1.3 the groups, with a key share only where
// the probe will finish the key exchange. Without one, a TLS 1.3 server
// that shares a group answers with a HelloRetryRequest naming it, which is
// how groups are enumerated without doing any key exchange.
type clientHello struct {
	version uint16
	suites  []uint16
	groups  []uint16 // TLS 1.3; older versions name legacyCurves
	share   *keyShare
	// curves replace legacyCurves in a hello before TLS 1.3 where set.
	curves []uint16
	// serverName is sent in a server_name extension where set.
	serverName string
	random     [32]byte
	session    []byte
}

func newHello(version uint16, suites, groups []uint16) *clientHello {
	h := &clientHello{version: version, suites: suites, groups: groups}
	_, _ = rand.Read(h.random[:])
	if version == versionTLS13 {
		// RFC 8446's middlebox compatibility mode: a legacy session ID
		// makes the hello look like a resumption to old middleboxes.
		h.session = make([]byte, 32)
		_, _ = rand.Read(h.session)
	}
	return h
}

// message is the ClientHello handshake message (header included), the
// bytes the TLS 1.3 transcript hashes.
func (h *clientHello) message() []byte {
	msg := h.write(-1)
	// Some servers hang on a hello of 256 to 511 bytes (RFC 7685); a
	// padding extension, 4 bytes of header and its zeros, moves it past.
	if n := len(msg); n >= 256 && n < 512 {
		return h.write(max(512-n-4, 0))
	}
	return msg
}

// write lays the hello out, with a padding extension of pad zero bytes
// when pad is not negative.
func (h *clientHello) write(pad int) []byte {
	var b builder
	b.u8(typeClientHello)
	b.vec(3, func() {
		b.u16(min(h.version, versionTLS12))
		b.bytes(h.random[:])
		b.vec(1, func() { b.bytes(h.session) })
		b.vec(2, func() {
			b.u16s(h.suites)
			if h.version < versionTLS13 {
				b.u16(scsvRenegotiation)
			}
		})
		b.vec(1, func() { b.u8(0) }) // the null compression method alone
		b.vec(2, func() {
			h.extensions(&b)
			if pad >= 0 {
				b.u16(extPadding)
				b.vec(2, func() { b.bytes(make([]byte, pad)) })
			}
		})
	})
	return b.out
}

func (h *clientHello) extensions(b *builder) {
	ext := func(id uint16, body func()) {
		b.u16(id)
		b.vec(2, body)
	}
	if h.serverName != "" {
		ext(extServerName, func() {
			b.vec(2, func() {
				b.u8(0) // host_name
				b.vec(2, func() { b.bytes([]byte(h.serverName)) })
			})
		})
	}
	if h.version < versionTLS13 {
		curves := legacyCurves
		if h.curves != nil {
			curves = h.curves
		}
		ext(extSupportedGroups, func() { b.vec(2, func() { b.u16s(curves) }) })
		// status_request for OCSP, with no responder ids and no
		// extensions (RFC 6066, 8): a server that staples sends
		// CertificateStatus after its Certificate.
		ext(extStatusRequest, func() { b.u8(1); b.u16(0); b.u16(0) })
		ext(extECPointFormats, func() { b.vec(1, func() { b.u8(0) }) })
		if h.version == versionTLS12 {
			ext(extSignatureAlgorithms, func() { b.vec(2, func() { b.u16s(signatureSchemes) }) })
		}
		return
	}
	ext(extSupportedVersions, func() { b.vec(1, func() { b.u16(versionTLS13) }) })
	ext(extSupportedGroups, func() { b.vec(2, func() { b.u16s(h.groups) }) })
	ext(extSignatureAlgorithms, func() { b.vec(2, func() { b.u16s(signatureSchemes) }) })
	ext(extKeyShare, func() {
		b.vec(2, func() {
			if h.share != nil {
				b.u16(h.share.group)
				b.vec(2, func() { b.bytes(h.share.data) })
			}
		})
	})
}

// record wraps the hello in one handshake record. The record version is
// TLS 1.0's for every TLS hello, as clients send it, since some servers
// refuse a first record at a version they do not speak; SSLv3 gets its own.
func (h *clientHello) record(msg []byte) []byte {
	var b builder
	b.u8(recordHandshake)
	if h.version == versionSSL30 {
		b.u16(versionSSL30)
	} else {
		b.u16(versionTLS10)
	}
	b.vec(2, func() { b.bytes(msg) })
	return b.out
}

// builder appends TLS's big-endian integers and length-prefixed vectors.
type builder struct{ out []byte }

func (b *builder) u8(v uint8)     { b.out = append(b.out, v) }
func (b *builder) u16(v uint16)   { b.out = append(b.out, byte(v>>8), byte(v)) }
func (b *builder) bytes(p []byte) { b.out = append(b.out, p...) }
func (b *builder) u16s(v []uint16) {
	for _, x := range v {
		b.u16(x)
	}
}

// vec writes what body appends behind a length of n bytes. The hellos are
// the probe's own and small, so a body too long for its length is a bug.
func (b *builder) vec(n int, body func()) {
	at := len(b.out)
	b.out = append(b.out, make([]byte, n)...)
	body()
	size := len(b.out) - at - n
	if size >= 1<<(8*n) {
		panic(fmt.Sprintf("tls hello: a vector of %d bytes behind a %d-byte length", size, n))
	}
	for i := range n {
		b.out[at+i] = byte(size >> (8 * (n - 1 - i)))
	}
}
