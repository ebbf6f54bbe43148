package tls

import (
	"bytes"
	"errors"
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
			if cert, _ := readCertificate(hr); len(cert) > maxHandshakeMessage {
				t.Fatalf("a certificate of %d bytes escaped the bound", len(cert))
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
