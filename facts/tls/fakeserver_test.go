package tls

import (
	"io"
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// parsedHello is a ClientHello as a server reads it.
type parsedHello struct {
	recordVersion, version uint16
	session                []byte
	suites                 []uint16
	extensions             []uint16
	versions               []uint16 // supported_versions
	groups                 []uint16 // supported_groups
	shares                 []keyShare
	size                   int // the handshake message, header included
}

// parseClientHello reads one ClientHello record the way a strict server
// does, failing on any length that does not add up.
func parseClientHello(t testing.TB, rec []byte) parsedHello {
	t.Helper()
	var h parsedHello
	r := &reader{b: rec}
	if typ := r.u8(); typ != recordHandshake {
		t.Fatalf("record type %d, want handshake", typ)
	}
	h.recordVersion = r.u16()
	msg := r.vec(2)
	h.size = len(msg)
	m := &reader{b: msg}
	if typ := m.u8(); typ != typeClientHello {
		t.Fatalf("handshake type %d, want ClientHello", typ)
	}
	body := &reader{b: m.vec(3)}
	h.version = body.u16()
	body.take(32)
	h.session = body.vec(1)
	sr := &reader{b: body.vec(2)}
	for len(sr.b) > 0 && !sr.failed {
		h.suites = append(h.suites, sr.u16())
	}
	if c := body.vec(1); len(c) != 1 || c[0] != 0 {
		t.Fatalf("compression methods % x, want the null method alone", c)
	}
	er := &reader{b: body.vec(2)}
	for len(er.b) > 0 && !er.failed {
		id, data := er.u16(), er.vec(2)
		h.extensions = append(h.extensions, id)
		x := &reader{b: data}
		switch id {
		case extSupportedVersions:
			v := &reader{b: x.vec(1)}
			for len(v.b) > 0 && !v.failed {
				h.versions = append(h.versions, v.u16())
			}
		case extSupportedGroups:
			g := &reader{b: x.vec(2)}
			for len(g.b) > 0 && !g.failed {
				h.groups = append(h.groups, g.u16())
			}
		case extKeyShare:
			k := &reader{b: x.vec(2)}
			for len(k.b) > 0 && !k.failed {
				h.shares = append(h.shares, keyShare{group: k.u16(), data: k.vec(2)})
			}
		}
	}
	if r.failed || m.failed || body.failed || er.failed || sr.failed || len(r.b)+len(m.b)+len(body.b) != 0 {
		t.Fatalf("a malformed ClientHello: % x", rec)
	}
	return h
}

// fakeServer answers hellos by a script: the suites it accepts at each
// version in its order of preference, its TLS 1.3 groups, and how it
// refuses. It speaks no further than its first flight.
type fakeServer struct {
	t      testing.TB
	suites map[uint16][]uint16
	groups []uint16
	cert   []byte   // the leaf sent after a TLS 1.2-or-older ServerHello
	chain  [][]byte // what it sends after the leaf
	hangUp bool     // refuse by closing, not with an alert
	rogue  uint16   // a suite chosen whatever was offered
	conns  atomic.Int32
}

func (f *fakeServer) start() int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			f.conns.Add(1)
			go f.serve(c)
		}
	}()
	return ln.Addr().(*net.TCPAddr).Port
}

func (f *fakeServer) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	var hdr [5]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return
	}
	body := make([]byte, int(hdr[3])<<8|int(hdr[4]))
	if _, err := io.ReadFull(c, body); err != nil {
		return
	}
	h := parseClientHello(f.t, append(hdr[:], body...))
	out := f.answer(h)
	if out == nil {
		return
	}
	_, _ = c.Write(out)
	// Linger so that the probe reads the answer, not a reset.
	_, _ = c.Read(make([]byte, 1))
}

// answer is the server's first flight, or nil to hang up.
func (f *fakeServer) answer(h parsedHello) []byte {
	if slices.Contains(h.versions, versionTLS13) {
		if suite, ok := f.pick(versionTLS13, h.suites); ok {
			for _, g := range f.groups {
				if slices.Contains(h.groups, g) {
					return f.retry(suite, g)
				}
			}
		}
		return f.refuse(40)
	}
	for v := h.version; v >= versionSSL30; v-- {
		if _, speaks := f.suites[v]; !speaks {
			continue
		}
		suite, ok := f.pick(v, h.suites)
		if !ok {
			return f.refuse(40)
		}
		// Its one curve is secp256r1, which an ECDHE suite needs offered.
		if ephemeral(suiteOf(suite).kex) == "ec" && !slices.Contains(h.groups, groupSecp256r1) {
			return f.refuse(40)
		}
		return f.flight(v, suite)
	}
	return f.refuse(70)
}

func (f *fakeServer) pick(v uint16, offered []uint16) (uint16, bool) {
	if _, speaks := f.suites[v]; speaks && f.rogue != 0 {
		return f.rogue, true
	}
	for _, s := range f.suites[v] {
		if slices.Contains(offered, s) {
			return s, true
		}
	}
	return 0, false
}

func (f *fakeServer) refuse(desc uint8) []byte {
	if f.hangUp {
		return nil
	}
	return []byte{recordAlert, 3, 3, 0, 2, 2, desc}
}

// serverHello writes a ServerHello message with random and extensions.
func serverHelloMessage(version uint16, random []byte, suite uint16, exts func(*builder)) []byte {
	var b builder
	b.u8(typeServerHello)
	b.vec(3, func() {
		b.u16(version)
		b.bytes(random)
		b.vec(1, func() {})
		b.u16(suite)
		b.u8(0)
		if exts != nil {
			b.vec(2, func() { exts(&b) })
		}
	})
	return b.out
}

func (f *fakeServer) retry(suite, group uint16) []byte {
	msg := serverHelloMessage(versionTLS12, helloRetryRandom[:], suite, func(b *builder) {
		b.u16(extSupportedVersions)
		b.vec(2, func() { b.u16(versionTLS13) })
		b.u16(extKeyShare)
		b.vec(2, func() { b.u16(group) })
	})
	return handshakeRecords(msg)
}

func (f *fakeServer) flight(v, suite uint16) []byte {
	random := make([]byte, 32)
	var msgs []byte
	msgs = append(msgs, serverHelloMessage(v, random, suite, nil)...)
	if f.cert != nil {
		msgs = append(msgs, certificateMessage(append([][]byte{f.cert}, f.chain...), false)...)
	}
	// The parameters of an ephemeral key exchange, as a real server sends
	// them (the probe reads no further): secp256r1, or a 2048-bit prime.
	switch ephemeral(suiteOf(suite).kex) {
	case "ec":
		msgs = append(msgs, typeServerKeyExchange, 0, 0, 4, 3, 0, byte(groupSecp256r1), 0)
	case "dh":
		prime := make([]byte, 256)
		prime[0] = 0x80
		body := append(append([]byte{1, 0}, prime...), 0, 1, 2, 0, 1, 5)
		msgs = append(msgs, typeServerKeyExchange, 0, byte(len(body)>>8), byte(len(body)))
		msgs = append(msgs, body...)
	}
	msgs = append(msgs, typeServerHelloDone, 0, 0, 0)
	return handshakeRecords(msgs)
}

// handshakeRecords splits handshake bytes over records of at most 1000
// bytes, so that messages span records as a long chain does.
func handshakeRecords(msgs []byte) []byte {
	var out []byte
	for len(msgs) > 0 {
		n := min(len(msgs), 1000)
		out = append(out, recordHandshake, 3, 3, byte(n>>8), byte(n))
		out = append(out, msgs[:n]...)
		msgs = msgs[n:]
	}
	return out
}
