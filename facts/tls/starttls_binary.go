package tls

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// ldapStartTLS is the LDAP StartTLS extended request (RFC 4511, 4.14.1),
// BER-encoded: LDAPMessage { messageID 1, [APPLICATION 23] ExtendedRequest
// { requestName [0] "1.3.6.1.4.1.1466.20037" } }.
var ldapStartTLS = append([]byte{0x30, 0x1d, 0x02, 0x01, 0x01, 0x77, 0x18, 0x80, 0x16}, "1.3.6.1.4.1.1466.20037"...)

const (
	// maxLDAPResponse bounds the one LDAPMessage read; an ExtendedResponse
	// with a diagnostic message is far smaller.
	maxLDAPResponse = 4096
	berSequence     = 0x30
	berInteger      = 0x02
	berEnumerated   = 0x0a
	berOctetString  = 0x04
	ldapExtendedOp  = 0x78 // [APPLICATION 24] ExtendedResponse
)

// ldapUpgrade sends StartTLS and reads its ExtendedResponse: result code
// 0 is the go-ahead. A server without the operation answers
// protocolError (2), one that will not unwillingToPerform (53) or
// unavailableCriticalExtension (12).
func ldapUpgrade(c *chat) error {
	if err := c.send(string(ldapStartTLS)); err != nil {
		return err
	}
	msg, err := c.berElement(maxLDAPResponse)
	if err != nil {
		return fmt.Errorf("reading the StartTLS response: %w", err)
	}
	id, code, diag, err := parseLDAPExtendedResponse(msg)
	switch {
	case err != nil:
		return fmt.Errorf("%w: %v", errNotProtocol, err)
	case id == 0:
		return fmt.Errorf("the server sent a notice of disconnection: result code %d %s", code, quote(diag))
	case id != 1:
		return fmt.Errorf("%w: a response to message %d, not to the StartTLS request", errNotProtocol, id)
	case code == 0:
		return nil
	case code == 2 || code == 12 || code == 53:
		return fmt.Errorf("%w: StartTLS answered result code %d %s", errNoTLS, code, quote(diag))
	}
	return fmt.Errorf("StartTLS answered result code %d %s", code, quote(diag))
}

// berElement reads one LDAPMessage off the wire, a BER SEQUENCE header and
// content, refusing one longer than limit and the indefinite form LDAP
// forbids.
func (c *chat) berElement(limit int) ([]byte, error) {
	head := make([]byte, 2, 6)
	if err := c.full(head); err != nil {
		return nil, err
	}
	if head[0] != berSequence {
		// Reading on would wait for a length that is no length.
		return nil, fmt.Errorf("%w: a response that starts 0x%02x, no LDAPMessage", errNotProtocol, head[0])
	}
	n := int(head[1])
	if n&0x80 != 0 {
		octets := n & 0x7f
		if octets == 0 || octets > 3 {
			return nil, fmt.Errorf("%w: a BER length of form 0x%02x", errNotProtocol, head[1])
		}
		more := make([]byte, octets)
		if err := c.full(more); err != nil {
			return nil, err
		}
		head = append(head, more...)
		n = 0
		for _, b := range more {
			n = n<<8 | int(b)
		}
	}
	if n > limit {
		return nil, fmt.Errorf("a response of %d bytes, over %d", n, limit)
	}
	body := make([]byte, n)
	if err := c.full(body); err != nil {
		return nil, err
	}
	return append(head, body...), nil
}

// berReader walks BER elements in a buffer already read.
type berReader struct{ b []byte }

var errBER = errors.New("malformed BER")

// next returns the next element's tag and content.
func (r *berReader) next() (tag byte, content []byte, err error) {
	if len(r.b) < 2 {
		return 0, nil, errBER
	}
	tag, n, rest := r.b[0], int(r.b[1]), r.b[2:]
	if n&0x80 != 0 {
		octets := n & 0x7f
		if octets == 0 || octets > 3 || len(rest) < octets {
			return 0, nil, errBER
		}
		n = 0
		for _, b := range rest[:octets] {
			n = n<<8 | int(b)
		}
		rest = rest[octets:]
	}
	if n > len(rest) {
		return 0, nil, errBER
	}
	r.b = rest[n:]
	return tag, rest[:n], nil
}

// expect returns the content of the next element, which must carry tag.
func (r *berReader) expect(tag byte) ([]byte, error) {
	t, content, err := r.next()
	if err != nil {
		return nil, err
	}
	if t != tag {
		return nil, fmt.Errorf("%w: tag 0x%02x where 0x%02x belongs", errBER, t, tag)
	}
	return content, nil
}

// berInt reads a small non-negative INTEGER or ENUMERATED.
func berInt(b []byte) (int, error) {
	if len(b) == 0 || len(b) > 4 || b[0]&0x80 != 0 {
		return 0, fmt.Errorf("%w: an integer of %d bytes", errBER, len(b))
	}
	n := 0
	for _, x := range b {
		n = n<<8 | int(x)
	}
	return n, nil
}

// parseLDAPExtendedResponse reads LDAPMessage { messageID,
// ExtendedResponse { resultCode, matchedDN, diagnosticMessage, ... } }.
func parseLDAPExtendedResponse(msg []byte) (id, code int, diag []byte, err error) {
	outer := &berReader{b: msg}
	seq, err := outer.expect(berSequence)
	if err != nil {
		return 0, 0, nil, err
	}
	r := &berReader{b: seq}
	idb, err := r.expect(berInteger)
	if err != nil {
		return 0, 0, nil, err
	}
	if id, err = berInt(idb); err != nil {
		return 0, 0, nil, err
	}
	op, err := r.expect(ldapExtendedOp)
	if err != nil {
		return 0, 0, nil, err
	}
	res := &berReader{b: op}
	cb, err := res.expect(berEnumerated)
	if err != nil {
		return 0, 0, nil, err
	}
	if code, err = berInt(cb); err != nil {
		return 0, 0, nil, err
	}
	if _, err = res.expect(berOctetString); err != nil { // matchedDN
		return 0, 0, nil, err
	}
	if diag, err = res.expect(berOctetString); err != nil {
		return 0, 0, nil, err
	}
	return id, code, diag, nil
}

// postgresSSLRequest is PostgreSQL's SSLRequest: length 8, code 80877103.
var postgresSSLRequest = []byte{0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f}

// postgresUpgrade sends SSLRequest and reads the one byte that answers
// it: S to go ahead, N for a server without SSL.
func postgresUpgrade(c *chat) error {
	if err := c.send(string(postgresSSLRequest)); err != nil {
		return err
	}
	var b [1]byte
	if err := c.full(b[:]); err != nil {
		return fmt.Errorf("reading the SSLRequest answer: %w", err)
	}
	switch b[0] {
	case 'S':
		return nil
	case 'N':
		return fmt.Errorf("%w: the SSLRequest was answered N (ssl is off)", errNoTLS)
	}
	return fmt.Errorf("%w: the SSLRequest was answered 0x%02x", errNotProtocol, b[0])
}

// MySQL's capability flags (client/server protocol, Protocol::HandshakeV10).
const (
	mysqlClientProtocol41     = 0x00000200
	mysqlClientSSL            = 0x00000800
	mysqlClientSecureConn     = 0x00008000
	mysqlMaxGreeting          = 4096
	mysqlSSLRequestPayloadLen = 32
)

// mysqlGreeting tells a MySQL or MariaDB greeting by its first bytes: a
// packet header with sequence 0 and a plausible length, then protocol
// version 10.
func mysqlGreeting(b []byte) bool {
	if len(b) < 5 {
		return false
	}
	n := int(b[0]) | int(b[1])<<8 | int(b[2])<<16
	return n >= 10 && n <= mysqlMaxGreeting && b[3] == 0 && b[4] == 10
}

// mysqlUpgrade reads the server's greeting, requires CLIENT_SSL among its
// capabilities, and sends the SSLRequest packet that precedes the hello.
func mysqlUpgrade(c *chat) error {
	var head [4]byte
	if err := c.full(head[:]); err != nil {
		return fmt.Errorf("reading the greeting: %w", err)
	}
	n := int(head[0]) | int(head[1])<<8 | int(head[2])<<16
	if n == 0 || n > mysqlMaxGreeting {
		return fmt.Errorf("%w: a greeting of %d bytes", errNotProtocol, n)
	}
	payload := make([]byte, n)
	if err := c.full(payload); err != nil {
		return fmt.Errorf("reading the greeting: %w", err)
	}
	g, err := parseMySQLGreeting(payload)
	if err != nil {
		return err
	}
	if g.capabilities&mysqlClientSSL == 0 {
		return fmt.Errorf("%w: the greeting of server %s lacks CLIENT_SSL", errNoTLS, quote(g.version))
	}
	req := make([]byte, 4+mysqlSSLRequestPayloadLen)
	req[0], req[3] = mysqlSSLRequestPayloadLen, head[3]+1
	binary.LittleEndian.PutUint32(req[4:], mysqlClientProtocol41|mysqlClientSSL|mysqlClientSecureConn)
	binary.LittleEndian.PutUint32(req[8:], 1<<24)
	req[12] = g.charset
	return c.send(string(req))
}

// mysqlHello is what the probe reads of a greeting.
type mysqlHello struct {
	version      []byte
	capabilities uint32
	charset      byte
}

// parseMySQLGreeting reads Protocol::HandshakeV10: version 10, server
// version, connection id, 8 bytes of auth data, a filler, the low
// capability flags, then optionally the character set, status and the
// high capability flags. An error packet (0xff) is the server refusing
// the client.
func parseMySQLGreeting(p []byte) (mysqlHello, error) {
	var g mysqlHello
	switch {
	case len(p) > 0 && p[0] == 0xff:
		code, msg := 0, []byte(nil)
		if len(p) >= 3 {
			code, msg = int(binary.LittleEndian.Uint16(p[1:3])), p[3:]
		}
		if len(msg) >= 6 && msg[0] == '#' {
			msg = msg[6:]
		}
		return g, fmt.Errorf("the server refused the connection: error %d %s", code, quote(msg))
	case len(p) > 0 && p[0] == 9:
		return g, fmt.Errorf("%w: protocol version 9 has no SSL", errNoTLS)
	case len(p) == 0 || p[0] != 10:
		return g, fmt.Errorf("%w: a greeting that is not protocol version 10", errNotProtocol)
	}
	end := bytes.IndexByte(p[1:], 0)
	if end < 0 {
		return g, fmt.Errorf("%w: the server version is not terminated", errNotProtocol)
	}
	g.version = p[1 : 1+end]
	rest := p[1+end+1:]
	// connection id 4, auth-plugin-data-part-1 8, filler 1, flags 2
	if len(rest) < 15 {
		return g, fmt.Errorf("%w: a greeting cut short", errNotProtocol)
	}
	g.capabilities = uint32(binary.LittleEndian.Uint16(rest[13:15]))
	rest = rest[15:]
	g.charset = 33 // utf8_general_ci, where the greeting names none
	if len(rest) >= 5 {
		g.charset = rest[0]
		g.capabilities |= uint32(binary.LittleEndian.Uint16(rest[3:5])) << 16
	}
	return g, nil
}
