package tls

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

// scripted is a server's side of a preamble, played from bytes: what the
// probe writes is thrown away.
type scripted struct {
	io.Reader
	io.Writer
}

// fuzzUpgrade plays data to one protocol's preamble, and its check that
// nothing is left ahead of the hello, and holds what every preamble owes:
// no panic, and nothing read past the bound or the data.
func fuzzUpgrade(t *testing.T, s *startTLS, data []byte) error {
	c := newChat(scripted{bytes.NewReader(data), io.Discard})
	err := s.upgrade(c)
	if n := c.read(); n > maxPreambleBytes || n > int64(len(data)) {
		t.Fatalf("%s: %d bytes read from %d offered, bound %d", s.name, n, len(data), maxPreambleBytes)
	}
	if err == nil {
		err = c.done()
	}
	return err
}

func FuzzStartTLSSMTP(f *testing.F) {
	f.Add([]byte("220 mx ESMTP\r\n250-mx\r\n250 STARTTLS\r\n220 go ahead\r\n"))
	f.Add([]byte("220-mx\r\n220 ESMTP\r\n250-mx\r\n250-SIZE 1\r\n250 8BITMIME\r\n"))
	f.Add([]byte("554 no\r\n"))
	f.Add([]byte("220 mx\r\n502 no EHLO\r\n"))
	f.Add([]byte("220 mx\r\n250 STARTTLS\r\n220 ok\r\n\x16\x03\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if fuzzUpgrade(t, startSMTP, data) == nil && !bytes.Contains(bytes.ToUpper(data), []byte("STARTTLS")) {
			t.Fatalf("agreed to TLS where the server never offered STARTTLS: %q", data)
		}
	})
}

func FuzzStartTLSFTP(f *testing.F) {
	f.Add([]byte("220-welcome\r\n text\r\n220 ready\r\n234 go\r\n"))
	f.Add([]byte("220 ready\r\n530 login first\r\n"))
	f.Add([]byte("120 wait\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if fuzzUpgrade(t, startFTP, data) == nil && !bytes.Contains(data, []byte("234")) {
			t.Fatalf("agreed to TLS without a 234: %q", data)
		}
	})
}

func FuzzStartTLSPOP3(f *testing.F) {
	f.Add([]byte("+OK ready\r\n+OK begin\r\n"))
	f.Add([]byte("+OK ready\r\n-ERR no\r\n"))
	f.Add([]byte("-ERR busy\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if fuzzUpgrade(t, startPOP3, data) == nil && bytes.Count(data, []byte("+OK")) < 2 {
			t.Fatalf("agreed to TLS without two +OK: %q", data)
		}
	})
}

func FuzzStartTLSIMAP(f *testing.F) {
	f.Add([]byte("* OK ready\r\n* CAPABILITY IMAP4rev1 STARTTLS\r\na OK done\r\nb OK begin\r\n"))
	f.Add([]byte("* OK ready\r\n* CAPABILITY IMAP4rev1\r\na OK done\r\n"))
	f.Add([]byte("* BYE busy\r\n"))
	f.Add([]byte("* PREAUTH hi\r\n* CAPABILITY STARTTLS\r\na NO\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if fuzzUpgrade(t, startIMAP, data) == nil && !strings.Contains(strings.ToUpper(string(data)), "STARTTLS") {
			t.Fatalf("agreed to TLS where the server never offered STARTTLS: %q", data)
		}
	})
}

func FuzzStartTLSLDAP(f *testing.F) {
	ok := append([]byte{0x30, 0x24, 0x02, 0x01, 0x01, 0x78, 0x1f, 0x0a, 0x01, 0x00, 0x04, 0x00, 0x04, 0x00, 0x8a, 0x16}, "1.3.6.1.4.1.1466.20037"...)
	f.Add(ok)
	f.Add([]byte{0x30, 0x0c, 0x02, 0x01, 0x01, 0x78, 0x07, 0x0a, 0x01, 0x00, 0x04, 0x00, 0x04, 0x00})
	f.Add([]byte{0x30, 0x0c, 0x02, 0x01, 0x00, 0x78, 0x07, 0x0a, 0x01, 0x34, 0x04, 0x00, 0x04, 0x00})
	f.Add([]byte{0x30, 0x84, 0x7f, 0xff, 0xff, 0xff})
	f.Add([]byte{0x30, 0x82, 0x10, 0x01})
	f.Fuzz(func(t *testing.T, data []byte) {
		err := fuzzUpgrade(t, startLDAP, data)
		if err == nil {
			if _, code, _, perr := parseLDAPExtendedResponse(data); perr != nil || code != 0 {
				t.Fatalf("agreed to TLS on a response with result code %d (%v): % x", code, perr, data)
			}
		}
	})
}

func FuzzStartTLSPostgres(f *testing.F) {
	f.Add([]byte("S"))
	f.Add([]byte("N"))
	f.Add([]byte("E\x00\x00\x00\x10SFATAL\x00"))
	f.Add([]byte("SS"))
	f.Fuzz(func(t *testing.T, data []byte) {
		err := fuzzUpgrade(t, startPostgres, data)
		if err == nil && (len(data) != 1 || data[0] != 'S') {
			t.Fatalf("agreed to TLS on %q", data)
		}
		if len(data) > 1 && data[0] == 'S' && !errors.Is(err, errNotProtocol) {
			t.Fatalf("bytes after S went unremarked: %q: %v", data, err)
		}
	})
}

func FuzzStartTLSMySQL(f *testing.F) {
	greeting := func(caps uint16) []byte {
		p := append([]byte{10}, "8.0.36\x00"...)
		p = append(p, 1, 0, 0, 0, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 0, byte(caps), byte(caps>>8), 255, 2, 0, 0xff, 0x0f)
		return append([]byte{byte(len(p)), 0, 0, 0}, p...)
	}
	f.Add(greeting(0xffff))
	f.Add(greeting(0xf7ff))
	f.Add([]byte{0x17, 0, 0, 0, 0xff, 0x69, 0x04, '#', 'H', 'Y', '0', '0', '0', 'H', 'o', 's', 't'})
	f.Add([]byte{0x05, 0, 0, 0, 9, 'v', '9', 0, 0})
	f.Add([]byte{0xff, 0xff, 0xff, 0})
	f.Fuzz(func(t *testing.T, data []byte) {
		if fuzzUpgrade(t, startMySQL, data) == nil {
			n := int(data[0]) | int(data[1])<<8 | int(data[2])<<16
			g, err := parseMySQLGreeting(data[4 : 4+n])
			if err != nil || g.capabilities&mysqlClientSSL == 0 {
				t.Fatalf("agreed to TLS on a greeting without CLIENT_SSL (%v): % x", err, data)
			}
		}
	})
}

// FuzzStartTLSFor: any greeting on any port names a known upgrade or
// none, and never a client-first one for a server that spoke.
func FuzzStartTLSFor(f *testing.F) {
	f.Add(25, []byte("220 mx ESMTP\r\n"))
	f.Add(3306, []byte{0x4a, 0, 0, 0, 10, '8', 0})
	f.Add(389, []byte{})
	f.Add(8080, []byte("SSH-2.0-x\r\n"))
	f.Fuzz(func(t *testing.T, port int, greeting []byte) {
		s := startTLSFor(port, greeting)
		if s != nil && s.clientFirst && len(greeting) > 0 {
			t.Fatalf("port %d greeting %q: %s, which waits for the client", port, greeting, s.name)
		}
	})
}
