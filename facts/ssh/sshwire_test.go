package ssh

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"testing"
)

// kexinitPayload builds a KEXINIT payload from ten comma-joined lists.
func kexinitPayload(lists ...string) []byte {
	b := append([]byte{sshMsgKexinit}, make([]byte, 16)...)
	for _, l := range lists {
		b = binary.BigEndian.AppendUint32(b, uint32(len(l)))
		b = append(b, l...)
	}
	return append(b, 0, 0, 0, 0, 0)
}

// packet wraps a payload in an unencrypted binary packet with 4 bytes of
// padding.
func packet(payload []byte) []byte {
	b := binary.BigEndian.AppendUint32(nil, uint32(len(payload)+5))
	b = append(b, 4)
	b = append(b, payload...)
	return append(b, 0, 0, 0, 0)
}

var sampleLists = []string{
	"curve25519-sha256,ecdh-sha2-nistp256,ext-info-s,kex-strict-s-v00@openssh.com", "ssh-ed25519,rsa-sha2-512",
	"aes128-ctr,aes128-cbc", "aes128-ctr,3des-cbc", "hmac-sha2-256", "hmac-sha1", "none,zlib@openssh.com", "none", "", "",
}

func TestReadKEXINIT(t *testing.T) {
	r := bufio.NewReader(bytes.NewReader(append([]byte("hello\r\nSSH-2.0-OpenSSH_9.2p1 Debian-2\r\n"), packet(kexinitPayload(sampleLists...))...)))
	v, err := ReadSSHVersion(r)
	if err != nil || v != "SSH-2.0-OpenSSH_9.2p1 Debian-2" {
		t.Fatalf("version %q, %v", v, err)
	}
	k, err := ReadKEXINIT(r)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(k.HostKeyAlgorithms, []string{"ssh-ed25519", "rsa-sha2-512"}) || !slices.Equal(k.MACsServerClient, []string{"hmac-sha1"}) ||
		len(k.LanguagesCS) != 0 || k.FirstKexFollows {
		t.Errorf("kexinit = %+v", k)
	}
	if got := withoutPseudoAlgorithms(k.KexAlgorithms); !slices.Equal(got, []string{"curve25519-sha256", "ecdh-sha2-nistp256"}) {
		t.Errorf("kex without pseudo names = %v", got)
	}
	if got := union(k.CiphersClientServer, k.CiphersServerClient); !slices.Equal(got, []string{"aes128-ctr", "aes128-cbc", "3des-cbc"}) {
		t.Errorf("ciphers = %v", got)
	}
}

func TestReadKEXINITRefuses(t *testing.T) {
	good := kexinitPayload(sampleLists...)
	huge := binary.BigEndian.AppendUint32(nil, maxSSHPacket+1)
	for name, in := range map[string][]byte{
		"too long":        append(huge, 4),
		"padding eats it": {0, 0, 0, 8, 7, 20, 0, 0, 0, 0, 0, 0},
		"not KEXINIT":     packet(append([]byte{21}, good[1:]...)),
		"list overruns":   packet(append(good[:17:17], 0, 0, 0xff, 0xff, 'a')),
		"name with space": packet(kexinitPayload(append([]string{"a b"}, sampleLists[1:]...)...)),
		"empty name":      packet(kexinitPayload(append([]string{"a,,b"}, sampleLists[1:]...)...)),
		"truncated":       packet(good[:len(good)-3]),
		"short read":      packet(good)[:40],
	} {
		if _, err := ReadKEXINIT(bytes.NewReader(in)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	for name, in := range map[string]string{
		"ssh 1":      "SSH-1.5-old\r\n",
		"long line":  strings.Repeat("x", 300) + "\n",
		"no version": strings.Repeat("banner\n", maxSSHPreamble+1),
	} {
		if _, err := ReadSSHVersion(bufio.NewReader(strings.NewReader(in))); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// FuzzKEXINIT feeds arbitrary bytes to the packet reader: it must never
// panic, and what it accepts holds only names within the packet bound.
func FuzzKEXINIT(f *testing.F) {
	f.Add(packet(kexinitPayload(sampleLists...)))
	f.Add(packet(kexinitPayload("", "", "", "", "", "", "", "", "", "")))
	f.Add([]byte{0, 0, 0, 5, 4, 20})
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := ReadKEXINIT(bytes.NewReader(data))
		if err != nil {
			return
		}
		total := 0
		for _, l := range [][]string{k.KexAlgorithms, k.HostKeyAlgorithms, k.CiphersClientServer, k.CiphersServerClient, k.MACsClientServer, k.MACsServerClient} {
			for _, n := range l {
				if n == "" || strings.ContainsAny(n, ", ") {
					t.Fatalf("bad name %q", n)
				}
				total += len(n)
			}
		}
		if total > maxSSHPacket {
			t.Fatalf("%d bytes of names from a bounded packet", total)
		}
	})
}

func TestAuthMethodNames(t *testing.T) {
	in := []string{"publickey", "", "pass word", "password", "publickey", strings.Repeat("x", 65), "keyboard-interactive\x1b"}
	if got := authMethodNames(in); !slices.Equal(got, []string{"publickey", "password"}) {
		t.Errorf("names = %q", got)
	}
	many := make([]string, 100)
	for i := range many {
		many[i] = "m" + strings.Repeat("x", i)
	}
	if got := authMethodNames(many); len(got) != maxAuthMethods {
		t.Errorf("%d names kept of 100", len(got))
	}
}
