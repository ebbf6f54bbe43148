package tls

import (
	"bufio"
	"encoding/binary"
	"io"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// front is a STARTTLS server for the tests: it speaks one protocol's real
// words before TLS, as the daemons do, and once the client asks for TLS
// splices the connection to a TLS server on backend, so that the TLS is
// that server's. It counts the connections it accepted and those it
// upgraded.
type front struct {
	port               int
	accepted, upgraded atomic.Int32
	// greetAfter holds the first connection's words back, as a server
	// that looks its client up first does until its resolver caches the
	// answer.
	greetAfter time.Duration
}

// frontSpeaker runs one connection's words before TLS and reports
// whether the client asked for TLS and was told to go ahead.
type frontSpeaker func(c net.Conn, r *bufio.Reader, offer bool) bool

var frontSpeakers = map[string]frontSpeaker{
	"smtp": smtpFront, "imap": imapFront, "pop3": pop3Front, "ftp": ftpFront,
	"ldap": ldapFront, "postgres": postgresFront, "mysql": mysqlFront,
}

// startFront serves proto on a loopback port; offer false makes it a
// server without TLS, which answers the upgrade as such servers do.
func startFront(t *testing.T, proto string, backend int, offer bool) *front {
	t.Helper()
	return startFrontAfter(t, proto, backend, offer, 0)
}

// startFrontAfter is startFront with its first greeting held back by
// delay.
func startFrontAfter(t *testing.T, proto string, backend int, offer bool, delay time.Duration) *front {
	t.Helper()
	speak := frontSpeakers[proto]
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	f := &front{port: ln.Addr().(*net.TCPAddr).Port, greetAfter: delay}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if f.accepted.Add(1) == 1 {
				time.Sleep(f.greetAfter)
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				if !speak(c, r, offer) {
					return
				}
				f.upgraded.Add(1)
				splice(c, r, backend)
			}()
		}
	}()
	return f
}

// splice joins the client to the TLS server, handing on what the client
// sent after its request for TLS (the start of its hello).
func splice(c net.Conn, r *bufio.Reader, backend int) {
	b, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(backend))
	if err != nil {
		return
	}
	defer b.Close()
	go func() {
		_, _ = io.Copy(b, r)
		if tc, ok := b.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
	}()
	_, _ = io.Copy(c, b)
}

func frontLine(r *bufio.Reader) (string, bool) {
	l, err := r.ReadString('\n')
	if err != nil {
		return "", false
	}
	return strings.TrimRight(l, "\r\n"), true
}

// smtpFront speaks as Postfix does: 220 greeting, EHLO extensions with
// STARTTLS where offered, 220 to STARTTLS.
func smtpFront(c net.Conn, r *bufio.Reader, offer bool) bool {
	io.WriteString(c, "220 front.test ESMTP gpuhost test\r\n")
	for {
		l, ok := frontLine(r)
		if !ok {
			return false
		}
		verb := strings.ToUpper(strings.Fields(l + " x")[0])
		switch {
		case verb == "EHLO" && offer:
			io.WriteString(c, "250-front.test\r\n250-PIPELINING\r\n250-SIZE 10240000\r\n250-STARTTLS\r\n250 8BITMIME\r\n")
		case verb == "EHLO":
			io.WriteString(c, "250-front.test\r\n250-PIPELINING\r\n250 8BITMIME\r\n")
		case verb == "HELO", verb == "NOOP", verb == "RSET":
			io.WriteString(c, "250 front.test\r\n")
		case verb == "STARTTLS" && offer:
			io.WriteString(c, "220 2.0.0 Ready to start TLS\r\n")
			return true
		case verb == "QUIT":
			io.WriteString(c, "221 2.0.0 Bye\r\n")
			return false
		default:
			io.WriteString(c, "502 5.5.2 Error: command not recognized\r\n")
		}
	}
}

// imapFront speaks as Dovecot does: capabilities in the greeting and in
// answer to CAPABILITY, OK to STARTTLS.
func imapFront(c net.Conn, r *bufio.Reader, offer bool) bool {
	caps := "IMAP4rev1 SASL-IR LOGIN-REFERRALS ID ENABLE IDLE LITERAL+"
	if offer {
		caps += " STARTTLS LOGINDISABLED"
	}
	io.WriteString(c, "* OK [CAPABILITY "+caps+"] gpuhost test ready.\r\n")
	for {
		l, ok := frontLine(r)
		if !ok {
			return false
		}
		f := strings.Fields(l)
		if len(f) < 2 {
			io.WriteString(c, "* BAD Error in IMAP command received by server.\r\n")
			continue
		}
		tag, cmd := f[0], strings.ToUpper(f[1])
		switch {
		case cmd == "CAPABILITY":
			io.WriteString(c, "* CAPABILITY "+caps+"\r\n"+tag+" OK Pre-login capabilities listed, post-login capabilities have more.\r\n")
		case cmd == "STARTTLS" && offer:
			io.WriteString(c, tag+" OK Begin TLS negotiation now.\r\n")
			return true
		case cmd == "LOGOUT":
			io.WriteString(c, "* BYE Logging out\r\n"+tag+" OK Logout completed.\r\n")
			return false
		default:
			io.WriteString(c, tag+" BAD Error in IMAP command "+cmd+": Unknown command.\r\n")
		}
	}
}

// pop3Front: +OK greeting, CAPA listing STLS where offered, +OK to STLS.
func pop3Front(c net.Conn, r *bufio.Reader, offer bool) bool {
	io.WriteString(c, "+OK gpuhost test POP3 ready.\r\n")
	for {
		l, ok := frontLine(r)
		if !ok {
			return false
		}
		switch cmd := strings.ToUpper(strings.Fields(l + " x")[0]); {
		case cmd == "CAPA" && offer:
			io.WriteString(c, "+OK\r\nCAPA\r\nTOP\r\nUIDL\r\nSTLS\r\nSASL PLAIN\r\n.\r\n")
		case cmd == "CAPA":
			io.WriteString(c, "+OK\r\nCAPA\r\nTOP\r\nUIDL\r\n.\r\n")
		case cmd == "STLS" && offer:
			io.WriteString(c, "+OK Begin TLS negotiation now.\r\n")
			return true
		case cmd == "QUIT":
			io.WriteString(c, "+OK Logging out.\r\n")
			return false
		default:
			io.WriteString(c, "-ERR Unknown command: "+cmd+"\r\n")
		}
	}
}

// ftpFront speaks as vsftpd does: a multi-line greeting, FEAT, 234 to
// AUTH TLS where offered and 530 where it is not.
func ftpFront(c net.Conn, r *bufio.Reader, offer bool) bool {
	io.WriteString(c, "220-gpuhost test FTP server\r\n Welcome.\r\n220 ready.\r\n")
	for {
		l, ok := frontLine(r)
		if !ok {
			return false
		}
		switch cmd := strings.ToUpper(l); {
		case cmd == "FEAT" && offer:
			io.WriteString(c, "211-Features:\r\n AUTH TLS\r\n PBSZ\r\n PROT\r\n UTF8\r\n211 End\r\n")
		case cmd == "FEAT":
			io.WriteString(c, "211-Features:\r\n UTF8\r\n211 End\r\n")
		case cmd == "AUTH TLS" && offer:
			io.WriteString(c, "234 Proceed with negotiation.\r\n")
			return true
		case strings.HasPrefix(cmd, "AUTH"):
			io.WriteString(c, "530 Please login with USER and PASS.\r\n")
		case cmd == "QUIT":
			io.WriteString(c, "221 Goodbye.\r\n")
			return false
		default:
			io.WriteString(c, "500 Unknown command.\r\n")
		}
	}
}

// ldapFront reads one LDAPMessage and answers an ExtendedRequest for
// StartTLS with success, or with protocolError where TLS is not offered,
// as slapd without a certificate does, naming the StartTLS OID in the
// response (RFC 4511, 4.14.2).
func ldapFront(c net.Conn, r *bufio.Reader, offer bool) bool {
	head := make([]byte, 2)
	if _, err := io.ReadFull(r, head); err != nil || head[0] != 0x30 || head[1]&0x80 != 0 {
		return false
	}
	body := make([]byte, head[1])
	if _, err := io.ReadFull(r, body); err != nil {
		return false
	}
	req := &berReader{b: body}
	idb, err1 := req.expect(berInteger)
	op, err2 := req.expect(0x77)
	oid, err3 := (&berReader{b: op}).expect(0x80)
	if err1 != nil || err2 != nil || err3 != nil || string(oid) != "1.3.6.1.4.1.1466.20037" {
		return false
	}
	code, diag := byte(0), ""
	if !offer {
		code, diag = 2, "unsupported extended operation"
	}
	resp := berTLV(0x0a, []byte{code})
	resp = append(resp, berTLV(0x04, nil)...)
	resp = append(resp, berTLV(0x04, []byte(diag))...)
	resp = append(resp, berTLV(0x8a, oid)...)
	msg := berTLV(0x30, append(berTLV(0x02, idb), berTLV(0x78, resp)...))
	c.Write(msg)
	return offer
}

func berTLV(tag byte, content []byte) []byte {
	return append([]byte{tag, byte(len(content))}, content...)
}

// postgresFront answers SSLRequest with S, or N as a server with ssl off.
func postgresFront(c net.Conn, r *bufio.Reader, offer bool) bool {
	req := make([]byte, 8)
	if _, err := io.ReadFull(r, req); err != nil || string(req) != string(postgresSSLRequest) {
		return false
	}
	if !offer {
		c.Write([]byte{'N'})
		return false
	}
	c.Write([]byte{'S'})
	return true
}

// mysqlFront greets as MySQL 8 does, with CLIENT_SSL where offered, and
// reads the client's SSLRequest packet.
func mysqlFront(c net.Conn, r *bufio.Reader, offer bool) bool {
	caps := uint32(0x000fa2ff) // as MySQL 8.0 without CLIENT_SSL (0x800)
	if offer {
		caps |= mysqlClientSSL
	}
	p := []byte{10}
	p = append(p, "8.0.36-gpuhost-test\x00"...)
	p = binary.LittleEndian.AppendUint32(p, 42)
	p = append(p, "abcdefgh\x00"...)
	p = binary.LittleEndian.AppendUint16(p, uint16(caps))
	p = append(p, 255)                         // utf8mb4_0900_ai_ci
	p = binary.LittleEndian.AppendUint16(p, 2) // SERVER_STATUS_AUTOCOMMIT
	p = binary.LittleEndian.AppendUint16(p, uint16(caps>>16))
	p = append(p, 21)
	p = append(p, make([]byte, 10)...)
	p = append(p, "ijklmnopqrst\x00"...)
	p = append(p, "caching_sha2_password\x00"...)
	c.Write(append([]byte{byte(len(p)), byte(len(p) >> 8), byte(len(p) >> 16), 0}, p...))
	head := make([]byte, 4)
	if _, err := io.ReadFull(r, head); err != nil {
		return false
	}
	body := make([]byte, int(head[0])|int(head[1])<<8|int(head[2])<<16)
	if _, err := io.ReadFull(r, body); err != nil || len(body) < 4 || head[3] != 1 {
		return false
	}
	return offer && binary.LittleEndian.Uint32(body)&mysqlClientSSL != 0
}
