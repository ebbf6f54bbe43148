package tls

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"math/big"
	"sync"
)

// Go's TLS stack has no finite-field groups, so a TLS 1.3 server that
// accepts only ffdhe would keep its certificate, which TLS 1.3 encrypts,
// from a probe that used it. For those servers the probe does the key
// exchange itself and reads the server's first flight: enough of RFC 8446
// to decrypt the Certificate, and nothing is sent after the hello.

// ffdheX are the X of each group's prime in RFC 7919, appendix A:
// p = 2^b - 2^(b-64) + (floor(2^(b-130) * e) + X) * 2^64 - 1.
var ffdheX = map[uint16]struct {
	bits int
	x    int64
}{
	groupFFDHE2048: {2048, 560316},
	groupFFDHE3072: {3072, 2625351},
	groupFFDHE4096: {4096, 5736041},
	groupFFDHE6144: {6144, 15705020},
	groupFFDHE8192: {8192, 10965728},
}

var (
	ffdheMu     sync.Mutex
	ffdhePrimes = map[uint16]*big.Int{}
)

// ffdhePrime computes a group's prime from its formula, once: the digits
// of e it needs come from the series sum 1/k!, in fixed point with guard
// bits that absorb the series' rounding. A test checks each is a safe
// prime and OpenSSL's.
func ffdhePrime(group uint16) *big.Int {
	g, ok := ffdheX[group]
	if !ok {
		return nil
	}
	ffdheMu.Lock()
	defer ffdheMu.Unlock()
	if p := ffdhePrimes[group]; p != nil {
		return p
	}
	const guard = 64
	prec := uint(g.bits - 130 + guard)
	term := new(big.Int).Lsh(big.NewInt(1), prec)
	e := new(big.Int).Set(term)
	for k := int64(1); term.Sign() > 0; k++ {
		term.Quo(term, big.NewInt(k))
		e.Add(e, term)
	}
	e.Rsh(e, guard)
	e.Add(e, big.NewInt(g.x))
	p := new(big.Int).Lsh(big.NewInt(1), uint(g.bits))
	p.Sub(p, new(big.Int).Lsh(big.NewInt(1), uint(g.bits-64)))
	p.Add(p, e.Lsh(e, 64))
	p.Sub(p, big.NewInt(1))
	ffdhePrimes[group] = p
	return p
}

// aesGCMSuites13 are the TLS 1.3 suites the probe's own handshake can
// decrypt with the standard library alone, and their hash.
var aesGCMSuites13 = map[uint16]struct {
	keyLen int
	hash   func() hash.Hash
}{
	0x1301: {16, sha256.New},
	0x1302: {32, sha512.New384},
}

// ffdheCertificate fetches the certificate chain of a TLS 1.3 server over
// the ffdhe group and AES-GCM suite given, leaf first.
func (pp *portProbe) ffdheCertificate(ctx context.Context, rt route, group, suite uint16) ([]*x509.Certificate, error) {
	p := ffdhePrime(group)
	cs, ok := aesGCMSuites13[suite]
	if p == nil || !ok {
		return nil, fmt.Errorf("no key exchange for group %s with suite 0x%04x", groupName(group), suite)
	}
	size := (p.BitLen() + 7) / 8
	// A 512-bit exponent is over twice the strength of the largest
	// group (RFC 7919, 5.2), and keeps the exchange quick.
	x, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 512))
	if err != nil {
		return nil, err
	}
	x.SetBit(x, 511, 1)
	pub := new(big.Int).Exp(big.NewInt(2), x, p)
	h := newHello(versionTLS13, []uint16{suite}, []uint16{group})
	h.share = &keyShare{group: group, data: pub.FillBytes(make([]byte, size))}
	h.serverName = rt.name

	conn, release, err := pp.connect(ctx, rt.addr, 0, 0)
	if err != nil {
		return nil, err
	}
	defer release()
	ch := h.message()
	if _, err := conn.Write(h.record(ch)); err != nil {
		return nil, err
	}
	hr := &handshakeReader{rr: newRecordReader(conn)}
	msg, err := hr.next()
	if err != nil {
		return nil, err
	}
	sh, err := parseServerHello(msg)
	if err != nil {
		return nil, err
	}
	if sh.retry || sh.version != versionTLS13 || sh.suite != suite || sh.group != group || len(sh.share) != size {
		return nil, fmt.Errorf("the server did not finish the %s key exchange it accepted", groupName(group))
	}
	if len(hr.buf) != 0 {
		return nil, errors.New("the server sent handshake messages in the clear after its ServerHello")
	}
	y := new(big.Int).SetBytes(sh.share)
	if y.Cmp(big.NewInt(1)) <= 0 || y.Cmp(new(big.Int).Sub(p, big.NewInt(1))) >= 0 {
		return nil, fmt.Errorf("the server's %s key share is out of range", groupName(group))
	}
	shared := new(big.Int).Exp(y, x, p).FillBytes(make([]byte, size))
	aead, iv, err := serverHandshakeKeys(cs.hash, cs.keyLen, shared, ch, msg)
	if err != nil {
		return nil, err
	}
	hr.rr.max = maxCiphertext
	dec := &decrypter{hr: hr, aead: aead, iv: iv}
	for range 8 {
		m, err := dec.next()
		if err != nil {
			return nil, err
		}
		switch m[0] {
		case typeEncryptedExtensions, typeCertificateRequest:
			continue
		case typeCertificate:
			ders, err := parseCertificates(m, true)
			if err != nil {
				return nil, err
			}
			return parseChain(ders)
		default:
			return nil, fmt.Errorf("handshake message type %d before the certificate", m[0])
		}
	}
	return nil, errors.New("no certificate among the server's first messages")
}

// serverHandshakeKeys runs RFC 8446's key schedule (7.1) from the shared
// secret to the server's handshake traffic key and IV.
func serverHandshakeKeys(h func() hash.Hash, keyLen int, shared, clientHello, serverHello []byte) (cipher.AEAD, []byte, error) {
	size := h().Size()
	early, err := hkdf.Extract(h, make([]byte, size), nil)
	if err != nil {
		return nil, nil, err
	}
	empty := h().Sum(nil)
	derived, err := expandLabel(h, early, "derived", empty, size)
	if err != nil {
		return nil, nil, err
	}
	hs, err := hkdf.Extract(h, shared, derived)
	if err != nil {
		return nil, nil, err
	}
	th := h()
	th.Write(clientHello)
	th.Write(serverHello)
	secret, err := expandLabel(h, hs, "s hs traffic", th.Sum(nil), size)
	if err != nil {
		return nil, nil, err
	}
	key, err := expandLabel(h, secret, "key", nil, keyLen)
	if err != nil {
		return nil, nil, err
	}
	iv, err := expandLabel(h, secret, "iv", nil, 12)
	if err != nil {
		return nil, nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, nil, err
	}
	aead, err := cipher.NewGCM(block)
	return aead, iv, err
}

// expandLabel is HKDF-Expand-Label (RFC 8446, 7.1).
func expandLabel(h func() hash.Hash, secret []byte, label string, context []byte, length int) ([]byte, error) {
	var b builder
	b.u16(uint16(length))
	b.vec(1, func() { b.bytes([]byte("tls13 " + label)) })
	b.vec(1, func() { b.bytes(context) })
	return hkdf.Expand(h, secret, string(b.out), length)
}

// decrypter reads the server's protected handshake messages.
type decrypter struct {
	hr   *handshakeReader
	aead cipher.AEAD
	iv   []byte
	seq  uint64
}

// next returns the next protected handshake message, header included.
func (d *decrypter) next() ([]byte, error) {
	for {
		if msg, err := d.hr.pop(); msg != nil || err != nil {
			return msg, err
		}
		rec, err := d.hr.rr.next()
		if err != nil {
			return nil, err
		}
		switch rec.typ {
		case recordChangeCipherSpec:
			continue
		case recordAlert:
			if len(rec.payload) == 2 {
				return nil, &alertError{level: rec.payload[0], desc: rec.payload[1]}
			}
			return nil, errors.New("a malformed alert")
		case recordApplicationData:
		default:
			return nil, fmt.Errorf("a record of type %d among protected records", rec.typ)
		}
		nonce := make([]byte, len(d.iv))
		copy(nonce, d.iv)
		var seq [8]byte
		binary.BigEndian.PutUint64(seq[:], d.seq)
		for i := range seq {
			nonce[len(nonce)-8+i] ^= seq[i]
		}
		d.seq++
		plain, err := d.aead.Open(nil, nonce, rec.payload, rec.header[:])
		if err != nil {
			return nil, fmt.Errorf("a protected record does not decrypt: %w", err)
		}
		// The inner content type is the last byte that is not padding.
		i := len(plain) - 1
		for i >= 0 && plain[i] == 0 {
			i--
		}
		if i < 0 {
			return nil, errors.New("a protected record of padding alone")
		}
		switch plain[i] {
		case recordHandshake:
			if len(d.hr.buf)+i > maxHandshakeMessage+4 {
				return nil, fmt.Errorf("protected handshake data over %d bytes: %w", maxHandshakeMessage, errOversized)
			}
			d.hr.buf = append(d.hr.buf, plain[:i]...)
		case recordAlert:
			if i == 2 {
				return nil, &alertError{level: plain[0], desc: plain[1]}
			}
			return nil, errors.New("a malformed protected alert")
		default:
			return nil, fmt.Errorf("a protected record of type %d before the certificate", plain[i])
		}
	}
}
