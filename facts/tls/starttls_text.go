package tls

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// numbered is an SMTP or FTP reply: a three-digit code and its lines'
// text.
type numbered struct {
	code  int
	lines []string
}

func (r numbered) String() string {
	if len(r.lines) == 0 {
		return strconv.Itoa(r.code)
	}
	return strconv.Itoa(r.code) + " " + quote([]byte(r.lines[0]))
}

// numberedReply reads one reply: lines "250-text" up to one "250 text".
// FTP (loose) lets a multi-line reply carry lines that do not start with
// the code (RFC 959, 4.2); SMTP does not (RFC 5321, 4.2.1).
func (c *chat) numberedReply(loose bool) (numbered, error) {
	var r numbered
	for range maxReplyLines {
		l, err := c.line()
		if err != nil {
			return r, err
		}
		code, last, text, ok := replyLine(l)
		switch {
		case ok && (r.code == 0 || code == r.code):
			r.code = code
			r.lines = append(r.lines, text)
			if last {
				return r, nil
			}
		case r.code != 0 && loose:
			r.lines = append(r.lines, l)
		default:
			return r, fmt.Errorf("%w: a reply line %s", errNotProtocol, quote([]byte(l)))
		}
	}
	return r, fmt.Errorf("a reply of more than %d lines", maxReplyLines)
}

// replyLine splits "250-text", "250 text" or "250".
func replyLine(l string) (code int, last bool, text string, ok bool) {
	if len(l) < 3 || (len(l) > 3 && l[3] != ' ' && l[3] != '-') {
		return 0, false, "", false
	}
	for _, c := range l[:3] {
		if c < '0' || c > '9' {
			return 0, false, "", false
		}
	}
	code, _ = strconv.Atoi(l[:3])
	if code < 100 {
		return 0, false, "", false
	}
	if len(l) == 3 {
		return code, true, "", true
	}
	return code, l[3] == ' ', l[4:], true
}

// smtpUpgrade: greeting 220, EHLO, STARTTLS among the extensions, and
// STARTTLS answered 220 (RFC 3207).
func smtpUpgrade(c *chat) error {
	g, err := c.numberedReply(false)
	if err != nil {
		return fmt.Errorf("reading the greeting: %w", err)
	}
	if g.code != 220 {
		return fmt.Errorf("the server refused the session: %s", g)
	}
	if err := c.send("EHLO gpuhost-probe.invalid\r\n"); err != nil {
		return err
	}
	ehlo, err := c.numberedReply(false)
	switch {
	case err != nil:
		return fmt.Errorf("reading the EHLO reply: %w", err)
	case ehlo.code >= 500 && ehlo.code < 600:
		return fmt.Errorf("%w: EHLO answered %s, so it has no extensions", errNoTLS, ehlo)
	case ehlo.code != 250:
		return fmt.Errorf("EHLO answered %s", ehlo)
	}
	offered := slices.ContainsFunc(ehlo.lines[1:], func(l string) bool {
		f := strings.Fields(l)
		return len(f) > 0 && strings.EqualFold(f[0], "STARTTLS")
	})
	if !offered {
		return fmt.Errorf("%w: the EHLO reply offers no STARTTLS", errNoTLS)
	}
	if err := c.send("STARTTLS\r\n"); err != nil {
		return err
	}
	r, err := c.numberedReply(false)
	if err != nil {
		return fmt.Errorf("reading the STARTTLS reply: %w", err)
	}
	if r.code != 220 {
		return fmt.Errorf("STARTTLS answered %s", r)
	}
	return nil
}

// ftpUpgrade: greeting 220, then AUTH TLS answered 234 (RFC 4217). A
// server without the command answers 500, 502 or 504; one whose policy
// refuses it 431 or 534; vsftpd without ssl_enable 530.
func ftpUpgrade(c *chat) error {
	g, err := c.numberedReply(true)
	if err != nil {
		return fmt.Errorf("reading the greeting: %w", err)
	}
	if g.code != 220 {
		return fmt.Errorf("the server refused the session: %s", g)
	}
	if err := c.send("AUTH TLS\r\n"); err != nil {
		return err
	}
	r, err := c.numberedReply(true)
	switch {
	case err != nil:
		return fmt.Errorf("reading the AUTH TLS reply: %w", err)
	case r.code == 234:
		return nil
	case r.code == 500, r.code == 502, r.code == 504, r.code == 431, r.code == 530, r.code == 534:
		return fmt.Errorf("%w: AUTH TLS answered %s", errNoTLS, r)
	}
	return fmt.Errorf("AUTH TLS answered %s", r)
}

// pop3Upgrade: greeting +OK, then STLS answered +OK (RFC 2595).
func pop3Upgrade(c *chat) error {
	g, err := c.line()
	if err != nil {
		return fmt.Errorf("reading the greeting: %w", err)
	}
	switch {
	case strings.HasPrefix(g, "-ERR"):
		return fmt.Errorf("the server refused the session: %s", quote([]byte(g)))
	case !strings.HasPrefix(g, "+OK"):
		return fmt.Errorf("%w: a greeting %s", errNotProtocol, quote([]byte(g)))
	}
	if err := c.send("STLS\r\n"); err != nil {
		return err
	}
	r, err := c.line()
	switch {
	case err != nil:
		return fmt.Errorf("reading the STLS reply: %w", err)
	case strings.HasPrefix(r, "+OK"):
		return nil
	case strings.HasPrefix(r, "-ERR"):
		return fmt.Errorf("%w: STLS answered %s", errNoTLS, quote([]byte(r)))
	}
	return fmt.Errorf("%w: STLS answered %s", errNotProtocol, quote([]byte(r)))
}

// imapUpgrade: greeting * OK, CAPABILITY naming STARTTLS, then STARTTLS
// answered OK (RFC 3501, 6.2.1).
func imapUpgrade(c *chat) error {
	g, err := c.line()
	if err != nil {
		return fmt.Errorf("reading the greeting: %w", err)
	}
	switch {
	case strings.HasPrefix(g, "* BYE"):
		return fmt.Errorf("the server refused the session: %s", quote([]byte(g)))
	case !strings.HasPrefix(g, "* OK") && !strings.HasPrefix(g, "* PREAUTH"):
		return fmt.Errorf("%w: a greeting %s", errNotProtocol, quote([]byte(g)))
	}
	if err := c.send("a CAPABILITY\r\n"); err != nil {
		return err
	}
	untagged, status, err := c.imapCommand("a")
	if err != nil {
		return fmt.Errorf("reading the CAPABILITY reply: %w", err)
	}
	if !strings.HasPrefix(status, "OK") {
		return fmt.Errorf("CAPABILITY answered %s", quote([]byte(status)))
	}
	offered := slices.ContainsFunc(untagged, func(l string) bool {
		f := strings.Fields(l)
		return len(f) > 0 && strings.EqualFold(f[0], "CAPABILITY") && slices.ContainsFunc(f[1:], func(c string) bool {
			return strings.EqualFold(c, "STARTTLS")
		})
	})
	if !offered {
		return fmt.Errorf("%w: the CAPABILITY reply offers no STARTTLS", errNoTLS)
	}
	if err := c.send("b STARTTLS\r\n"); err != nil {
		return err
	}
	_, status, err = c.imapCommand("b")
	if err != nil {
		return fmt.Errorf("reading the STARTTLS reply: %w", err)
	}
	if !strings.HasPrefix(status, "OK") {
		return fmt.Errorf("STARTTLS answered %s", quote([]byte(status)))
	}
	return nil
}

// imapCommand reads the untagged lines (without "* ") up to the tagged
// completion, and returns the completion's status and text.
func (c *chat) imapCommand(tag string) (untagged []string, status string, err error) {
	for range maxReplyLines {
		l, err := c.line()
		if err != nil {
			return nil, "", err
		}
		switch {
		case strings.HasPrefix(l, "* "):
			untagged = append(untagged, l[2:])
		case strings.HasPrefix(l, tag+" "):
			return untagged, l[len(tag)+1:], nil
		default:
			return nil, "", fmt.Errorf("%w: a response line %s", errNotProtocol, quote([]byte(l)))
		}
	}
	return nil, "", fmt.Errorf("a response of more than %d lines", maxReplyLines)
}
