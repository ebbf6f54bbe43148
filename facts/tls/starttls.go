package tls

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"
)

// Bounds on what a STARTTLS preamble reads: a server's greeting and
// replies before TLS are the attacker's to write, and are read with the
// connection's deadline and no further than these.
const (
	// maxPreambleBytes bounds everything read before the upgrade on one
	// connection.
	maxPreambleBytes = 64 << 10
	// maxPreambleLine bounds one line of a text protocol's reply; SMTP
	// allows 512 octets, and an IMAP CAPABILITY line is the longest seen.
	maxPreambleLine = 4096
	// maxReplyLines bounds the lines of one multi-line reply.
	maxReplyLines = 128
	// greetingPeek is how much of a server's first words the probe keeps
	// to tell which protocol it speaks.
	greetingPeek = 512
)

// errNoTLS marks a service that speaks the protocol but offers no TLS
// on it: its listener is no TLS port, and is listed as not judged.
var errNoTLS = errors.New("offers no TLS")

// errNotProtocol marks a reply that is not the protocol the preamble
// speaks: the port was taken for the wrong service.
var errNotProtocol = errors.New("not the expected protocol")

// startTLS is one protocol's upgrade: the words exchanged before the TLS
// hello, run on every connection the probe opens to the port.
type startTLS struct {
	name string // as facts record it: smtp, imap, pop3, ftp, ldap, postgres, mysql
	// clientFirst: the server waits for the client, so only its port
	// says what it speaks.
	clientFirst bool
	upgrade     func(c *chat) error
}

var (
	startSMTP     = &startTLS{name: "smtp", upgrade: smtpUpgrade}
	startIMAP     = &startTLS{name: "imap", upgrade: imapUpgrade}
	startPOP3     = &startTLS{name: "pop3", upgrade: pop3Upgrade}
	startFTP      = &startTLS{name: "ftp", upgrade: ftpUpgrade}
	startLDAP     = &startTLS{name: "ldap", clientFirst: true, upgrade: ldapUpgrade}
	startPostgres = &startTLS{name: "postgres", clientFirst: true, upgrade: postgresUpgrade}
	startMySQL    = &startTLS{name: "mysql", upgrade: mysqlUpgrade}
)

// startTLSPorts are the ports whose service, by convention, upgrades to
// TLS in-band.
var startTLSPorts = map[int]*startTLS{
	21: startFTP, 25: startSMTP, 110: startPOP3, 143: startIMAP, 389: startLDAP,
	587: startSMTP, 2525: startSMTP, 3306: startMySQL, 5432: startPostgres,
}

// startTLSFor names the upgrade a port's service takes, from its greeting
// where it spoke first, else from its port alone; nil when neither says.
// A greeting decides over the port, so that SSH on port 25 stays SSH.
func startTLSFor(port int, greeting []byte) *startTLS {
	byPort := startTLSPorts[port]
	if len(greeting) == 0 {
		if byPort != nil && byPort.clientFirst {
			return byPort
		}
		return nil
	}
	text := strings.ToUpper(string(greeting[:min(len(greeting), greetingPeek)]))
	switch {
	case strings.HasPrefix(text, "+OK"):
		return startPOP3
	case strings.HasPrefix(text, "* OK"), strings.HasPrefix(text, "* PREAUTH"):
		return startIMAP
	case mysqlGreeting(greeting):
		return startMySQL
	case strings.HasPrefix(text, "220"):
		// SMTP first: a mail host's name may hold "ftp", while no FTP
		// server calls itself SMTP.
		switch {
		case byPort == startFTP || byPort == startSMTP:
			return byPort
		case strings.Contains(text, "SMTP"):
			return startSMTP
		case strings.Contains(text, "FTP"):
			return startFTP
		}
	case byPort == startMySQL && len(greeting) >= 5 && greeting[3] == 0:
		// A MySQL server that refuses the client at once greets with an
		// error packet, which its preamble reports.
		return startMySQL
	}
	return nil
}

// run does the preamble on conn within timeout, or until ctx ends, and
// leaves the connection ready for the hello with a fresh deadline.
func (s *startTLS) run(ctx context.Context, conn net.Conn, timeout time.Duration) error {
	if err := conn.SetDeadline(time.Now().Add(timeout)); err != nil {
		return err
	}
	// A cancellation that came before the deadline was set would be
	// undone by it.
	if err := ctx.Err(); err != nil {
		return err
	}
	c := newChat(conn)
	if err := s.upgrade(c); err != nil {
		return &startTLSError{proto: s.name, err: err}
	}
	if err := c.done(); err != nil {
		return &startTLSError{proto: s.name, err: err}
	}
	return conn.SetDeadline(time.Now().Add(timeout))
}

// startTLSError is a preamble that did not end in TLS.
type startTLSError struct {
	proto string
	err   error
}

func (e *startTLSError) Error() string { return e.proto + " STARTTLS: " + e.err.Error() }
func (e *startTLSError) Unwrap() error { return e.err }

// describe says how the preamble failed, with the probe's timeout named
// where it ran out.
func (e *startTLSError) describe(timeout time.Duration) string {
	return strings.Replace(e.Error(), os.ErrDeadlineExceeded.Error(), "no reply within "+timeout.String(), 1)
}

// chat is one preamble's side of the conversation: lines and packets read
// within maxPreambleBytes, words written as they are.
type chat struct {
	w  io.Writer
	lr *io.LimitedReader
	r  *bufio.Reader
}

func newChat(rw io.ReadWriter) *chat {
	lr := &io.LimitedReader{R: rw, N: maxPreambleBytes}
	return &chat{w: rw, lr: lr, r: bufio.NewReaderSize(lr, maxPreambleLine)}
}

// read returns how many bytes the chat took from the connection.
func (c *chat) read() int64 { return maxPreambleBytes - c.lr.N }

func (c *chat) send(s string) error {
	if _, err := io.WriteString(c.w, s); err != nil {
		return c.readErr(err)
	}
	return nil
}

// line reads one line up to LF, without its CR LF; one longer than
// maxPreambleLine is an error, as is a connection closed midway.
func (c *chat) line() (string, error) {
	b, err := c.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		return "", fmt.Errorf("a line longer than %d bytes", maxPreambleLine)
	}
	if err != nil {
		return "", c.readErr(err)
	}
	return string(bytes.TrimRight(b, "\r\n")), nil
}

// full reads exactly len(b) bytes.
func (c *chat) full(b []byte) error {
	if _, err := io.ReadFull(c.r, b); err != nil {
		return c.readErr(err)
	}
	return nil
}

// errClosed: the server ended the conversation.
var errClosed = errors.New("the server closed the connection")

// readErr names a failed read or write in words that hold from one run to the
// next, without the connection's ephemeral port.
func (c *chat) readErr(err error) error {
	switch {
	case c.lr.N == 0:
		return fmt.Errorf("the server sent more than %d bytes before TLS", maxPreambleBytes)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errClosed
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return fmt.Errorf("%w: reset by the peer", errClosed)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return os.ErrDeadlineExceeded
	}
	return err
}

// done checks that nothing was left unread when the server agreed to TLS:
// bytes sent ahead of the client's hello would be taken for the TLS
// exchange (the injection of CVE-2011-0411).
func (c *chat) done() error {
	if n := c.r.Buffered(); n > 0 {
		return fmt.Errorf("%w: the server sent %d bytes after agreeing to TLS, before the client's hello", errNotProtocol, n)
	}
	return nil
}

// quote shows untrusted words from a server in a report, quoted.
func quote(b []byte) string { return fmt.Sprintf("%q", printable(b)) }

// printable keeps the first line of untrusted text, printable ASCII only,
// cut to a length a report line can hold.
func printable(b []byte) string {
	const max = 80
	b = bytes.TrimRight(b, "\r\n\x00")
	if i := bytes.IndexAny(b, "\r\n"); i >= 0 {
		b = b[:i]
	}
	var s strings.Builder
	for i, c := range b {
		if i == max {
			s.WriteString("...")
			break
		}
		if c < 0x20 || c > 0x7e {
			c = '.'
		}
		s.WriteByte(c)
	}
	return s.String()
}
