package tls

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// A TLS 1.2-or-older server with an ephemeral key exchange says in its
// ServerKeyExchange which curve (ECDHE) or which finite field group (DHE)
// the key agreement runs over; its strength is the weaker of that and the
// suite. The probe reads it in the clear, after the certificate.

// legacyCurveRows are the elliptic curves of the TLS Supported Groups
// registry that a TLS 1.2-or-older hello may name, with their field size
// in bits (x25519 counts as 256).
var legacyCurveRows = []struct {
	name string
	bits int
}{
	{"sect163k1", 163}, {"sect163r1", 163}, {"sect163r2", 163}, {"sect193r1", 193}, {"sect193r2", 193},
	{"sect233k1", 233}, {"sect233r1", 233}, {"sect239k1", 239}, {"sect283k1", 283}, {"sect283r1", 283},
	{"sect409k1", 409}, {"sect409r1", 409}, {"sect571k1", 571}, {"sect571r1", 571},
	{"secp160k1", 160}, {"secp160r1", 160}, {"secp160r2", 160}, {"secp192k1", 192}, {"secp192r1", 192},
	{"secp224k1", 224}, {"secp224r1", 224}, {"secp256k1", 256}, {"secp256r1", 256}, {"secp384r1", 384},
	{"secp521r1", 521}, {"brainpoolP256r1", 256}, {"brainpoolP384r1", 384}, {"brainpoolP512r1", 512},
	{"x25519", 256}, {"x448", 448},
}

// curveOf names a legacy curve by its code point (1 to 30) and gives its
// size; an unknown one is named by its number with size 0.
func curveOf(id uint16) (string, int) {
	if id >= 1 && int(id) <= len(legacyCurveRows) {
		c := legacyCurveRows[id-1]
		return c.name, c.bits
	}
	return "0x" + hex4(id), 0
}

// serverKex is what a ServerKeyExchange says of the key agreement: the
// named curve, or the bit length of the DH prime.
type serverKex struct {
	curve  uint16
	dhBits int
}

// ephemeral says which ServerKeyExchange a suite's key exchange sends:
// "ec" for ECDHE and anonymous ECDH, "dh" for DHE and anonymous DH, and
// "" for one that sends none the probe reads (static RSA, PSK, SRP).
func ephemeral(kex string) string {
	switch {
	case strings.HasPrefix(kex, "ECDHE_") && !strings.Contains(kex, "PSK"), kex == "ECDH_anon":
		return "ec"
	case kex == "DHE_RSA", kex == "DHE_DSS", kex == "DH_anon":
		return "dh"
	}
	return ""
}

// parseServerKeyExchange reads the parameters at the head of a
// ServerKeyExchange message (header included): for "ec" the
// ECParameters, which must name a curve (RFC 8422, 5.4); for "dh" the
// prime's length (RFC 5246, 7.4.3). The signature after them is not read.
func parseServerKeyExchange(msg []byte, kind string) (serverKex, error) {
	r := &reader{b: msg}
	if r.u8() != typeServerKeyExchange {
		return serverKex{}, errors.New("not a ServerKeyExchange")
	}
	body := &reader{b: r.vec(3)}
	if r.failed {
		return serverKex{}, errors.New("a ServerKeyExchange shorter than its length")
	}
	switch kind {
	case "ec":
		curveType := body.u8()
		curve := body.u16()
		switch {
		case body.failed:
			return serverKex{}, errors.New("a ServerKeyExchange too short for its ECParameters")
		case curveType != 3:
			return serverKex{}, fmt.Errorf("ECParameters of curve type %d, not a named curve", curveType)
		}
		return serverKex{curve: curve}, nil
	case "dh":
		p := body.vec(2)
		if body.failed || len(p) == 0 {
			return serverKex{}, errors.New("a ServerKeyExchange too short for its DH prime")
		}
		return serverKex{dhBits: new(big.Int).SetBytes(p).BitLen()}, nil
	}
	return serverKex{}, fmt.Errorf("no ServerKeyExchange is read for key exchange %q", kind)
}
