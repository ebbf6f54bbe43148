package tls

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestParseServerHello(t *testing.T) {
	random := bytes.Repeat([]byte{7}, 32)
	tls13 := func(b *builder) {
		b.u16(extSupportedVersions)
		b.vec(2, func() { b.u16(versionTLS13) })
		b.u16(extKeyShare)
		b.vec(2, func() { b.u16(groupX25519); b.vec(2, func() { b.bytes(make([]byte, 32)) }) })
	}
	for name, tc := range map[string]struct {
		msg  []byte
		want serverHello
	}{
		"SSLv3, no extensions": {serverHelloMessage(versionSSL30, random, 0x000a, nil), serverHello{version: versionSSL30, suite: 0x000a}},
		"TLS 1.2, an unknown extension": {serverHelloMessage(versionTLS12, random, 0xc02f, func(b *builder) {
			b.u16(0xff01)
			b.vec(2, func() { b.u8(0) })
		}), serverHello{version: versionTLS12, suite: 0xc02f}},
		"TLS 1.3": {serverHelloMessage(versionTLS12, random, 0x1301, tls13), serverHello{version: versionTLS13, suite: 0x1301, group: groupX25519}},
		"retry":   {(&fakeServer{}).retry(0x1302, groupFFDHE2048)[5:], serverHello{version: versionTLS13, suite: 0x1302, retry: true, group: groupFFDHE2048}},
	} {
		sh, err := parseServerHello(tc.msg)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if sh.version != tc.want.version || sh.suite != tc.want.suite || sh.retry != tc.want.retry || sh.group != tc.want.group {
			t.Errorf("%s: %+v, want %+v", name, *sh, tc.want)
		}
		// Every truncation, and any trailing byte, is refused.
		for n := range len(tc.msg) {
			if _, err := parseServerHello(tc.msg[:n]); err == nil {
				t.Errorf("%s: truncated to %d bytes, accepted", name, n)
			}
		}
		if _, err := parseServerHello(append(bytes.Clone(tc.msg), 0)); err == nil {
			t.Errorf("%s: a trailing byte, accepted", name)
		}
	}
}

// records builds raw records of type typ around each payload.
func records(typ uint8, payloads ...[]byte) []byte {
	var out []byte
	for _, p := range payloads {
		out = append(out, typ, 3, 3, byte(len(p)>>8), byte(len(p)))
		out = append(out, p...)
	}
	return out
}

func TestRecordLimits(t *testing.T) {
	big := make([]byte, maxHandshakeMessage+1)
	huge := []byte{typeCertificate, byte(len(big) >> 16), byte(len(big) >> 8), byte(len(big))}
	for name, tc := range map[string]struct {
		in   []byte
		want string
		is   error
	}{
		"an oversized record":            {[]byte{recordHandshake, 3, 3, 0x40, 0x01}, "a record of 16385 bytes, over 16384", errOversized},
		"a truncated record":             {[]byte{recordHandshake, 3, 3, 0, 9, 2, 0}, "truncated: the connection closed inside a record of 9 bytes", io.ErrUnexpectedEOF},
		"a truncated header":             {[]byte{recordHandshake, 3}, "truncated: the connection closed inside a record header", io.ErrUnexpectedEOF},
		"a handshake message cut short":  {records(recordHandshake, []byte{typeServerHello, 0, 0, 9, 3}), "truncated: the connection closed inside a handshake message", io.ErrUnexpectedEOF},
		"an oversized handshake message": {records(recordHandshake, huge), "a handshake message of 131073 bytes, over 131072", errOversized},
		"an HTTP answer":                 {[]byte("HTTP/1.1 400 Bad Request\r\n"), "the answer is not a TLS record: it starts 48 54 54", errNotTLS},
		"an SSLv2 answer":                {[]byte{0x80, 0x2e, 0x04, 0x00, 0x01}, "the answer is not a TLS record", errNotTLS},
		"an alert":                       {records(recordAlert, []byte{2, 40}), "alert handshake_failure", nil},
		"a warning, then an alert":       {records(recordAlert, []byte{1, 112}, []byte{2, 70}), "alert protocol_version", nil},
		"application data first":         {records(recordApplicationData, []byte{1}), "a record of type 23 where a handshake message belongs", nil},
		"an empty handshake record":      {records(recordHandshake, nil), "an empty handshake record", nil},
		"a closed connection":            {nil, "EOF", io.EOF},
	} {
		hr := &handshakeReader{rr: newRecordReader(bytes.NewReader(tc.in))}
		_, err := hr.next()
		if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s: %v, want %q (%v)", name, err, tc.want, tc.is)
		}
	}
}

// A server that sends on and on is cut off at maxServerBytes, however
// small its records.
func TestServerBytesBound(t *testing.T) {
	rec := records(recordChangeCipherSpec, []byte{1})
	stream := bytes.Repeat(rec, maxServerBytes/len(rec)+1)
	hr := &handshakeReader{rr: newRecordReader(bytes.NewReader(stream))}
	if _, err := hr.next(); !errors.Is(err, errOversized) || !strings.Contains(err.Error(), "more than 262144 bytes") {
		t.Errorf("%v, want the bound on bytes read", err)
	}
}

// The leaf is read from a flight whose Certificate spans many records.
func TestReadCertificateAcrossRecords(t *testing.T) {
	leaf := testLeaf(t)
	f := (&fakeServer{cert: leaf}).flight(versionTLS12, 0x009e)
	var split []byte
	for r := newRecordReader(bytes.NewReader(f)); ; {
		rec, err := r.next()
		if err != nil {
			break
		}
		for p := rec.payload; len(p) > 0; {
			n := min(len(p), 100)
			split = append(split, records(recordHandshake, p[:n])...)
			p = p[n:]
		}
	}
	hr := &handshakeReader{rr: newRecordReader(bytes.NewReader(split))}
	if _, err := hr.next(); err != nil {
		t.Fatal(err)
	}
	got, err := readCertificate(hr)
	if err != nil || len(got) != 1 || !bytes.Equal(got[0], leaf) {
		t.Errorf("chain of %d certificates (%v), want the leaf of %d bytes alone", len(got), err, len(leaf))
	}
	// An anonymous suite's flight ends without one, which is no error.
	hr = &handshakeReader{rr: newRecordReader(bytes.NewReader(records(recordHandshake, []byte{typeServerHelloDone, 0, 0, 0})))}
	if got, err := readCertificate(hr); got != nil || err != nil {
		t.Errorf("ServerHelloDone alone: %x, %v", got, err)
	}
}

func TestServerKeyExchangeParameters(t *testing.T) {
	ske := func(body ...byte) []byte {
		return append([]byte{typeServerKeyExchange, 0, byte(len(body) >> 8), byte(len(body))}, body...)
	}
	prime := make([]byte, 128) // 1024 bits, top bit set
	prime[0] = 0x80
	dh := ske(append(append([]byte{0, 128}, prime...), 0, 1, 2, 0, 1, 5)...)
	for _, c := range []struct {
		name string
		msg  []byte
		kind string
		want serverKex
		err  string
	}{
		{"a named curve", ske(3, 0, 23, 65), "ec", serverKex{curve: 23}, ""},
		{"explicit curve parameters", ske(1, 0, 23, 65), "ec", serverKex{}, "curve type 1"},
		{"a 1024-bit prime", dh, "dh", serverKex{dhBits: 1024}, ""},
		{"a prime past the end", ske(0, 200, 1, 2), "dh", serverKex{}, "too short"},
		{"a length past the message", []byte{typeServerKeyExchange, 0, 1, 0, 3}, "ec", serverKex{}, "shorter than its length"},
	} {
		got, err := parseServerKeyExchange(c.msg, c.kind)
		if got != c.want || (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %+v, %v; want %+v, %q", c.name, got, err, c.want, c.err)
		}
	}
	if name, bits := curveOf(23); name != "secp256r1" || bits != 256 {
		t.Errorf("curve 23 is %s of %d bits", name, bits)
	}
	if name, bits := curveOf(16); name != "secp160r1" || bits != 160 {
		t.Errorf("curve 16 is %s of %d bits", name, bits)
	}
}

func TestAGreetingThatIsAnAlertIsARefusal(t *testing.T) {
	if a := greetingAlert([]byte{21, 3, 1, 0, 2, 2, 40}); a == nil || a.desc != 40 {
		t.Errorf("a handshake_failure alert on accept: %+v", a)
	}
	for _, g := range [][]byte{[]byte("SSH-2.0-OpenSSH_9.2\r\n"), {21, 3, 1, 0, 2, 2}, {21, 3, 1, 0, 3, 2, 40, 0}, {22, 3, 1, 0, 2, 2, 40}} {
		if a := greetingAlert(g); a != nil {
			t.Errorf("%q read as alert %+v", g, a)
		}
	}
}
