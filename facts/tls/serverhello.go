package tls

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
)

// Bounds on what a server may send the probe, which reads untrusted bytes.
const (
	// maxPlaintext is the largest record a plaintext handshake may use
	// (RFC 8446, 5.1).
	maxPlaintext = 1 << 14
	// maxCiphertext is the largest TLS 1.3 protected record (RFC 8446,
	// 5.2); only the probe's own ffdhe handshake reads one.
	maxCiphertext = maxPlaintext + 256
	// maxHandshakeMessage bounds one reassembled handshake message: a
	// Certificate message with a long chain fits several times over.
	maxHandshakeMessage = 1 << 17
	// maxServerBytes bounds everything read from one connection.
	maxServerBytes = 1 << 18
)

var (
	// errNotTLS: the server answered with bytes that are no TLS record.
	errNotTLS = errors.New("the answer is not a TLS record")
	// errOversized: a record or handshake message longer than TLS allows.
	errOversized = errors.New("oversized")
)

// helloRetryRandom is the ServerHello.random that marks a HelloRetryRequest
// (RFC 8446, 4.1.3): SHA-256 of "HelloRetryRequest".
var helloRetryRandom = sha256.Sum256([]byte("HelloRetryRequest"))

// record is one TLS record as read, its header kept for TLS 1.3's AEAD.
type record struct {
	header  [5]byte
	typ     uint8
	payload []byte
}

// recordReader reads TLS records from a server, bounded in size each and
// in all.
type recordReader struct {
	r    io.Reader
	read int
	// max is the largest record accepted: maxPlaintext until the probe
	// expects protected records.
	max int
}

func newRecordReader(r io.Reader) *recordReader {
	return &recordReader{r: r, max: maxPlaintext}
}

// next reads one record. A first byte that is no record type, or a
// version whose major is not 3, is errNotTLS: an HTTP error page, an SSH
// banner or an SSLv2 answer.
func (rr *recordReader) next() (record, error) {
	var rec record
	if _, err := io.ReadFull(rr.r, rec.header[:]); err != nil {
		return rec, truncated(err, "a record header")
	}
	rec.typ = rec.header[0]
	if rec.typ < recordChangeCipherSpec || rec.typ > recordHeartbeat || rec.header[1] != 3 {
		return rec, fmt.Errorf("%w: it starts % x", errNotTLS, rec.header[:3])
	}
	n := int(rec.header[3])<<8 | int(rec.header[4])
	if n > rr.max {
		return rec, fmt.Errorf("a record of %d bytes, over %d: %w", n, rr.max, errOversized)
	}
	if rr.read+5+n > maxServerBytes {
		return rec, fmt.Errorf("the server sent more than %d bytes: %w", maxServerBytes, errOversized)
	}
	rec.payload = make([]byte, n)
	if _, err := io.ReadFull(rr.r, rec.payload); err != nil {
		return rec, truncated(err, fmt.Sprintf("a record of %d bytes", n))
	}
	rr.read += 5 + n
	return rec, nil
}

// truncated names a read cut short; a connection closed before anything
// arrived stays io.EOF, which the prober takes for a refusal.
func truncated(err error, what string) error {
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("truncated: the connection closed inside %s: %w", what, err)
	}
	return err
}

// alertError is a TLS alert the server sent.
type alertError struct {
	level, desc uint8
}

func (a *alertError) Error() string {
	return "alert " + alertName(a.desc)
}

func alertName(d uint8) string {
	switch d {
	case 0:
		return "close_notify"
	case 10:
		return "unexpected_message"
	case 20:
		return "bad_record_mac"
	case 22:
		return "record_overflow"
	case 40:
		return "handshake_failure"
	case 42:
		return "bad_certificate"
	case 47:
		return "illegal_parameter"
	case 50:
		return "decode_error"
	case 51:
		return "decrypt_error"
	case 70:
		return "protocol_version"
	case 71:
		return "insufficient_security"
	case 80:
		return "internal_error"
	case 86:
		return "inappropriate_fallback"
	case 109:
		return "missing_extension"
	case 110:
		return "unsupported_extension"
	case 112:
		return "unrecognized_name"
	case 116:
		return "certificate_required"
	}
	return fmt.Sprintf("%d", d)
}

// handshakeReader reassembles handshake messages from plaintext records.
// An alert ends it with an *alertError; ChangeCipherSpec records, which a
// TLS 1.3 server may send for middleboxes, are passed over.
type handshakeReader struct {
	rr  *recordReader
	buf []byte
}

// pop takes the first whole message, header included, off what the
// records brought; nil while it is still incomplete.
func (hr *handshakeReader) pop() ([]byte, error) {
	if len(hr.buf) < 4 {
		return nil, nil
	}
	n := int(hr.buf[1])<<16 | int(hr.buf[2])<<8 | int(hr.buf[3])
	if n > maxHandshakeMessage {
		return nil, fmt.Errorf("a handshake message of %d bytes, over %d: %w", n, maxHandshakeMessage, errOversized)
	}
	if len(hr.buf) < 4+n {
		return nil, nil
	}
	msg := hr.buf[: 4+n : 4+n]
	hr.buf = hr.buf[4+n:]
	return msg, nil
}

// next returns the next handshake message, header included.
func (hr *handshakeReader) next() ([]byte, error) {
	for {
		if msg, err := hr.pop(); msg != nil || err != nil {
			return msg, err
		}
		rec, err := hr.rr.next()
		if err != nil {
			if len(hr.buf) > 0 && errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("truncated: the connection closed inside a handshake message: %w", io.ErrUnexpectedEOF)
			}
			return nil, err
		}
		switch rec.typ {
		case recordHandshake:
			if len(rec.payload) == 0 {
				return nil, errors.New("an empty handshake record")
			}
			hr.buf = append(hr.buf, rec.payload...)
		case recordAlert:
			if len(rec.payload) != 2 {
				return nil, fmt.Errorf("an alert record of %d bytes, not 2", len(rec.payload))
			}
			a := &alertError{level: rec.payload[0], desc: rec.payload[1]}
			// A warning other than close_notify (unrecognized_name,
			// say) lets the handshake go on.
			if a.level == 1 && a.desc != 0 {
				continue
			}
			return nil, a
		case recordChangeCipherSpec:
			continue
		default:
			return nil, fmt.Errorf("a record of type %d where a handshake message belongs", rec.typ)
		}
	}
}

// serverHello is what the probe needs of a ServerHello or
// HelloRetryRequest.
type serverHello struct {
	// version is the one chosen: supported_versions where the server sent
	// it (TLS 1.3), else the legacy field.
	version uint16
	suite   uint16
	retry   bool   // a HelloRetryRequest
	group   uint16 // the key_share's group (a retry's selected_group)
	share   []byte // the server's key share (a TLS 1.3 ServerHello)
}

// parseServerHello reads a ServerHello message, header included. Every
// length is checked against what contains it, and nothing is allocated
// beyond the message itself.
func parseServerHello(msg []byte) (*serverHello, error) {
	r := &reader{b: msg}
	if t := r.u8(); t != typeServerHello {
		return nil, fmt.Errorf("handshake message type %d where a ServerHello belongs", t)
	}
	body := r.vec(3)
	if r.failed || len(r.b) != 0 {
		return nil, errors.New("a malformed ServerHello header")
	}
	r = &reader{b: body}
	sh := &serverHello{version: r.u16()}
	random := r.take(32)
	r.vec(1) // legacy_session_id_echo
	sh.suite = r.u16()
	r.u8() // compression
	if r.failed {
		return nil, errors.New("a truncated ServerHello")
	}
	sh.retry = bytes.Equal(random, helloRetryRandom[:])
	if len(r.b) == 0 {
		return sh, nil // no extensions: SSLv3, or a server that sends none
	}
	exts := r.vec(2)
	if r.failed || len(r.b) != 0 {
		return nil, errors.New("a ServerHello with a malformed extensions block")
	}
	er := &reader{b: exts}
	for len(er.b) > 0 && !er.failed {
		id, data := er.u16(), er.vec(2)
		if er.failed {
			break
		}
		xr := &reader{b: data}
		switch id {
		case extSupportedVersions:
			sh.version = xr.u16()
		case extKeyShare:
			sh.group = xr.u16()
			if !sh.retry {
				sh.share = xr.vec(2)
			}
		default:
			continue
		}
		if xr.failed || len(xr.b) != 0 {
			return nil, fmt.Errorf("a ServerHello with a malformed extension %d", id)
		}
	}
	if er.failed {
		return nil, errors.New("a ServerHello with a truncated extension")
	}
	return sh, nil
}

// Bounds on the certificate chain a server sends, which the probe parses
// and keeps in its facts: real chains are two to four certificates of a few
// kilobytes each.
const (
	// maxChainCertificates is the most certificates one chain may have.
	maxChainCertificates = 10
	// maxChainBytes bounds the DER of one chain's certificates together.
	maxChainBytes = 1 << 16
)

// errChainBound: a chain over maxChainCertificates or maxChainBytes.
var errChainBound = errors.New("over the probe's bound on certificate chains")

// parseCertificates returns the DER of every certificate a Certificate
// message carries, leaf first, in the order sent, header included: TLS
// 1.3's when tls13 (a request context, and extensions after each
// certificate, which are skipped), else the older list of certificates
// alone. A chain over maxChainCertificates or maxChainBytes is refused.
func parseCertificates(msg []byte, tls13 bool) ([][]byte, error) {
	r := &reader{b: msg}
	if t := r.u8(); t != typeCertificate {
		return nil, fmt.Errorf("handshake message type %d where a Certificate belongs", t)
	}
	r = &reader{b: r.vec(3)}
	if tls13 {
		r.vec(1)
	}
	list := &reader{b: r.vec(3)}
	if r.failed || len(r.b) != 0 {
		return nil, errors.New("a malformed Certificate message")
	}
	if len(list.b) == 0 {
		return nil, errors.New("the server sent an empty certificate chain")
	}
	var chain [][]byte
	size := 0
	for len(list.b) > 0 {
		der := list.vec(3)
		if tls13 {
			list.vec(2)
		}
		if list.failed || len(der) == 0 {
			return nil, fmt.Errorf("a malformed certificate at depth %d of the chain", len(chain))
		}
		if len(chain) == maxChainCertificates {
			return nil, fmt.Errorf("the server sent more than %d certificates: %w", maxChainCertificates, errChainBound)
		}
		if size += len(der); size > maxChainBytes {
			return nil, fmt.Errorf("the server's certificates come to more than %d bytes: %w", maxChainBytes, errChainBound)
		}
		chain = append(chain, der)
	}
	return chain, nil
}

// reader takes big-endian integers and length-prefixed vectors off a byte
// slice; a read past the end sets failed and yields zeros.
type reader struct {
	b      []byte
	failed bool
}

func (r *reader) take(n int) []byte {
	if r.failed || n > len(r.b) {
		r.failed = true
		return nil
	}
	out := r.b[:n:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u8() uint8 {
	if b := r.take(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if b := r.take(2); b != nil {
		return uint16(b[0])<<8 | uint16(b[1])
	}
	return 0
}

// vec reads a vector behind a length of n bytes (1 to 3).
func (r *reader) vec(n int) []byte {
	l := r.take(n)
	if l == nil {
		return nil
	}
	size := 0
	for _, x := range l {
		size = size<<8 | int(x)
	}
	return r.take(size)
}
