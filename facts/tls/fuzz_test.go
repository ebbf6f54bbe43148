package tls

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
)

func FuzzOpenSSL(f *testing.F) {
	f.Add([]byte("openssl_conf = i\n[i]\nssl_conf = s\n[s]\nsystem_default = d\n[d]\nMinProtocol = TLSv1.3\n"))
	f.Add([]byte("a = $b ${c::d} $(e) \"q\\\"\" 'x' \\\n continued # c\n.include = x\n[ s ]\n"))
	f.Add([]byte("[unterminated\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseOpenSSL(data)
		if err != nil {
			return
		}
		sd := cfg.SystemDefault()
		if sd.Section == "" && (sd.MinProtocol != "" || sd.MaxProtocol != "") {
			t.Fatalf("protocols without a system_default section: %+v", sd)
		}
		for _, entries := range cfg.Sections {
			for _, e := range entries {
				if len(e.Value) > maxOpenSSLValue {
					t.Fatalf("value of %d bytes escaped the bound", len(e.Value))
				}
			}
		}
	})
}

func FuzzNginx(f *testing.F) {
	f.Add([]byte("http { ssl_protocols TLSv1.3; server { listen 443 ssl; } }\n"))
	f.Add([]byte("a \"b\\\"c\" 'd' e\\ f; # c\nstream { server { ssl on; } }"))
	f.Add([]byte("http {"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseNginx(data)
		if err != nil {
			return
		}
		for _, s := range cfg.TLSSettings() {
			if s.Line < 1 || s.Line > 1+strings.Count(string(data), "\n") {
				t.Fatalf("line %d outside the input", s.Line)
			}
		}
	})
}

// FuzzServerHello feeds a server's answer, as bytes off the wire, to what
// the probe reads it with: never a panic, nothing kept beyond the bounds,
// and a first record that is truncated or over TLS's size refused.
func FuzzServerHello(f *testing.F) {
	random := bytes.Repeat([]byte{1}, 32)
	f.Add((&fakeServer{cert: []byte{0x30, 3, 1, 1, 0}}).flight(versionTLS12, 0xc02f))
	f.Add((&fakeServer{}).retry(0x1301, groupFFDHE2048))
	f.Add(handshakeRecords(serverHelloMessage(versionSSL30, random, 0x0003, nil)))
	f.Add([]byte{recordAlert, 3, 3, 0, 2, 2, 40})
	f.Add([]byte{recordHandshake, 3, 3, 0x40, 0x01, typeServerHello})
	f.Add([]byte{recordHandshake, 3, 1, 0, 4, typeServerHello, 0xff, 0xff, 0xff})
	f.Add([]byte("HTTP/1.1 400 Bad Request\r\n\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rr := newRecordReader(bytes.NewReader(data))
		hr := &handshakeReader{rr: rr}
		msg, err := hr.next()
		if err == nil {
			if len(msg) < 4 || len(msg) > maxHandshakeMessage+4 {
				t.Fatalf("a handshake message of %d bytes escaped the bounds", len(msg))
			}
			if sh, err := parseServerHello(msg); err == nil && len(sh.share) > len(msg) {
				t.Fatalf("a key share of %d bytes from a %d-byte message", len(sh.share), len(msg))
			}
			chain, err := readCertificate(hr)
			size := 0
			for _, c := range chain {
				size += len(c)
				if len(c) == 0 {
					t.Fatal("an empty certificate in the chain")
				}
			}
			if len(chain) > maxChainCertificates || size > maxChainBytes {
				t.Fatalf("a chain of %d certificates, %d bytes, escaped the bounds", len(chain), size)
			}
			if err == nil && chain != nil {
				if _, perr := parseChain(chain); perr != nil && errors.Is(perr, errChainBound) {
					t.Fatalf("a chain the reader kept is over parseChain's bounds: %v", perr)
				}
			}
		}
		if rr.read > maxServerBytes || rr.read > len(data) {
			t.Fatalf("%d bytes taken from %d offered", rr.read, len(data))
		}
		if len(data) >= 5 && data[0] >= recordChangeCipherSpec && data[0] <= recordHeartbeat && data[1] == 3 {
			n := int(data[3])<<8 | int(data[4])
			if n > maxPlaintext && !errors.Is(err, errOversized) {
				t.Fatalf("a first record of %d bytes: %v, want it refused as oversized", n, err)
			}
			if len(data) < 5+n && err == nil {
				t.Fatalf("a first record of %d bytes with %d there: accepted", n, len(data)-5)
			}
		}
	})
}

// certificateMessage writes a Certificate handshake message carrying
// chain, at TLS 1.3 (an empty request context and no extensions) or older.
func certificateMessage(chain [][]byte, tls13 bool) []byte {
	var b builder
	b.u8(typeCertificate)
	b.vec(3, func() {
		if tls13 {
			b.vec(1, func() {})
		}
		b.vec(3, func() {
			for _, c := range chain {
				b.vec(3, func() { b.bytes(c) })
				if tls13 {
					b.vec(2, func() {})
				}
			}
		})
	})
	return b.out
}

// FuzzCertificateMessage feeds a Certificate message, as the TLS 1.2 flight
// and the probe's ffdhe handshake read it, to parseCertificates: never a
// panic, never an empty certificate, never more than the chain's bounds, and
// what it returns written again reads back the same.
func FuzzCertificateMessage(f *testing.F) {
	leaf := []byte{0x30, 3, 1, 1, 0}
	f.Add(certificateMessage([][]byte{leaf}, false), false)
	f.Add(certificateMessage([][]byte{leaf, {0x30, 0}, leaf}, false), false)
	f.Add(certificateMessage([][]byte{leaf, leaf}, true), true)
	f.Add(certificateMessage(slices.Repeat([][]byte{leaf}, maxChainCertificates+1), false), false)
	f.Add([]byte{typeCertificate, 0, 0, 3, 0, 0, 0}, false)
	f.Add([]byte{typeCertificate, 0, 0, 8, 0, 0, 0, 5, 0, 0, 1, 0xff}, true)
	f.Fuzz(func(t *testing.T, msg []byte, tls13 bool) {
		chain, err := parseCertificates(msg, tls13)
		if err != nil {
			if chain != nil {
				t.Fatalf("a chain of %d certificates with the error %v", len(chain), err)
			}
			return
		}
		size := 0
		for _, c := range chain {
			if len(c) == 0 {
				t.Fatal("an empty certificate in the chain")
			}
			size += len(c)
		}
		if len(chain) == 0 || len(chain) > maxChainCertificates || size > maxChainBytes {
			t.Fatalf("a chain of %d certificates, %d bytes, escaped the bounds", len(chain), size)
		}
		again, err := parseCertificates(certificateMessage(chain, tls13), tls13)
		if err != nil || !slices.EqualFunc(chain, again, bytes.Equal) {
			t.Fatalf("the chain written again reads back as %d certificates (%v), want %d", len(again), err, len(chain))
		}
	})
}

// FuzzServerKeyExchange feeds the parameters reader hostile messages: it
// reads only within the message, and a prime is sized, never copied
// beyond it.
func FuzzServerKeyExchange(f *testing.F) {
	f.Add([]byte{typeServerKeyExchange, 0, 0, 4, 3, 0, 23, 0}, true)
	f.Add([]byte{typeServerKeyExchange, 0, 0, 5, 0, 2, 0xff, 0x01, 0}, false)
	f.Add([]byte{typeServerKeyExchange, 0xff, 0xff, 0xff, 0}, false)
	f.Fuzz(func(t *testing.T, msg []byte, ec bool) {
		kind := "dh"
		if ec {
			kind = "ec"
		}
		k, err := parseServerKeyExchange(msg, kind)
		if err != nil {
			return
		}
		if k.dhBits > 8*len(msg) {
			t.Fatalf("a %d-bit prime from a %d-byte message", k.dhBits, len(msg))
		}
		if ec && k.dhBits != 0 || !ec && k.curve != 0 {
			t.Fatalf("%s parameters %+v", kind, k)
		}
	})
}
