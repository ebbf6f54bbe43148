package ovmfvars

import (
	"bytes"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// msVars is Debian's variable file with Microsoft's keys enrolled.
const msVars = "/usr/share/OVMF/OVMF_VARS_4M.ms.fd"

// emptyStore builds a variable file the way edk2's build lays out an empty
// one: the NV data firmware volume header, its checksum, and an
// authenticated store of storeSize bytes with nothing in it.
func emptyStore(storeSize int) []byte {
	const hdr = 0x48
	f := bytes.Repeat([]byte{0xff}, hdr+storeSize)
	le := binary.LittleEndian
	clear(f[:hdr])
	copy(f[16:], nvDataFV[:])
	le.PutUint64(f[32:], uint64(len(f)))
	copy(f[40:], fvSignature)
	le.PutUint32(f[44:], 0x0004feff)
	le.PutUint16(f[48:], hdr)
	f[55] = 2
	le.PutUint32(f[56:], uint32(len(f)/0x1000+1))
	le.PutUint32(f[60:], 0x1000)
	le.PutUint16(f[50:], -checksum16(f[:hdr]))
	copy(f[hdr:], authStore[:])
	le.PutUint32(f[hdr+16:], uint32(storeSize))
	f[hdr+20], f[hdr+21] = storeFormatted, storeHealthy
	clear(f[hdr+22 : hdr+28])
	return f
}

func certDER(t *testing.T) (string, []byte) {
	t.Helper()
	_, certFile := testutil.SigningKey(t, t.TempDir(), "gpuhost test MOK")
	b, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(b)
	if blk == nil {
		t.Fatalf("%s holds no PEM", certFile)
	}
	return certFile, blk.Bytes
}

// Debian's own variable file reads as OVMF stores it: Microsoft's PK, KEK
// and db, and dbx, each time-based authenticated; and MokList added to it
// reads back with shim's GUID and attributes, holding what efitools'
// cert-to-efi-sig-list makes of the certificate, while every other live
// variable and every byte outside the new one stays as it was.
func TestMokListInDebiansMSVars(t *testing.T) {
	src := testutil.File(t, msVars, "ovmf")
	orig, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	s, err := Parse(bytes.Clone(orig))
	if err != nil {
		t.Fatalf("parsing %s: %v", src, err)
	}
	for _, want := range []struct {
		name   string
		vendor GUID
	}{{"PK", GlobalVariable}, {"KEK", GlobalVariable}, {"db", ImageSecurityDatabase}, {"dbx", ImageSecurityDatabase}} {
		v, ok := s.Get(want.name, want.vendor)
		if !ok || v.Attributes != NonVolatile|BootService|RuntimeAccess|TimeBasedAuthn || len(v.Data) == 0 {
			t.Errorf("%s in %s: %+v (found %v)", want.name, src, v.Attributes, ok)
		}
	}
	if db, _ := s.Get("db", ImageSecurityDatabase); !bytes.Contains(db.Data, []byte("Microsoft Corporation UEFI CA 2011")) {
		t.Error("db does not hold Microsoft's UEFI CA, which signs shim")
	}
	if _, ok := s.Get(MokListName, ShimLock); ok {
		t.Fatalf("%s already has a MokList", src)
	}

	certFile, der := certDER(t)
	dst := filepath.Join(t.TempDir(), "vars.fd")
	if err := WithMokList(src, dst, der); err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(orig) {
		t.Fatalf("the file grew from %d to %d bytes", len(orig), len(out))
	}
	back, err := Parse(bytes.Clone(out))
	if err != nil {
		t.Fatalf("reading back %s: %v", dst, err)
	}
	mok, ok := back.Get(MokListName, ShimLock)
	if !ok || mok.Attributes != MokListAttributes {
		t.Fatalf("MokList read back: %+v, found %v", mok, ok)
	}
	esl := filepath.Join(t.TempDir(), "mok.esl")
	testutil.Run(t, time.Minute, testutil.Tool(t, "cert-to-efi-sig-list", "efitools"), "-g", ShimLock.String(), certFile, esl)
	want, err := os.ReadFile(esl)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(mok.Data, want) {
		t.Errorf("MokList's data is not what cert-to-efi-sig-list writes:\n got %x\nwant %x", mok.Data, want)
	}
	if _, err := x509.ParseCertificate(mok.Data[44:]); err != nil {
		t.Errorf("the entry is not the certificate: %v", err)
	}
	if !bytes.Equal(out[:mok.Offset], orig[:mok.Offset]) {
		t.Error("bytes before MokList changed")
	}
	end := align(mok.Offset + varHeaderSize + 2*len(MokListName+"\x00") + len(mok.Data))
	if !bytes.Equal(out[end:], orig[end:]) {
		t.Error("bytes after MokList changed")
	}
	live := func(s *Store) map[string][]byte {
		m := map[string][]byte{}
		for _, v := range s.Variables() {
			if v.Live {
				m[v.Vendor.String()+":"+v.Name] = v.Data
			}
		}
		return m
	}
	a, b := live(s), live(back)
	delete(b, ShimLock.String()+":"+MokListName)
	if len(a) != len(b) {
		t.Errorf("%d live variables before, %d after (MokList aside)", len(a), len(b))
	}
	for k, v := range a {
		if !bytes.Equal(b[k], v) {
			t.Errorf("%s changed", k)
		}
	}
}

// Setting a variable again leaves the old copy deleted, as the firmware
// does; time-based authenticated variables, volatile ones and what does
// not fit are refused.
func TestSetReplacesAndRefuses(t *testing.T) {
	s, err := Parse(emptyStore(512))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Set("MokList", ShimLock, MokListAttributes, []byte("one")); err != nil {
		t.Fatal(err)
	}
	if err := s.Set("MokList", ShimLock, MokListAttributes, []byte("two")); err != nil {
		t.Fatal(err)
	}
	back, err := Parse(s.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	vs := back.Variables()
	if len(vs) != 2 || vs[0].Live || !vs[1].Live || string(vs[1].Data) != "two" {
		t.Errorf("after two sets: %+v", vs)
	}
	if v, ok := back.Get("MokList", ShimLock); !ok || string(v.Data) != "two" {
		t.Errorf("Get: %+v %v", v, ok)
	}
	for _, c := range []struct {
		attr uint32
		data []byte
		want string
	}{
		{NonVolatile | BootService | RuntimeAccess | TimeBasedAuthn, nil, "needs a signed write"},
		{BootService, nil, "volatile"},
		{MokListAttributes, make([]byte, 600), "do not fit"},
	} {
		if err := s.Set("X", ShimLock, c.attr, c.data); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Set with attributes %#x and %d bytes: %v, want %q", c.attr, len(c.data), err, c.want)
		}
	}
}

// A file that is not an authenticated store, or whose headers point past
// it, is refused with what is wrong.
func TestParseRefusesDamage(t *testing.T) {
	good := emptyStore(256)
	s, _ := Parse(bytes.Clone(good))
	if err := s.Set("MokList", ShimLock, MokListAttributes, []byte("x")); err != nil {
		t.Fatal(err)
	}
	withVar := s.Bytes()
	for _, c := range []struct {
		name string
		edit func([]byte)
		want string
	}{
		{"signature", func(b []byte) { b[40] = 'x' }, "_FVH"},
		{"checksum", func(b []byte) { b[60]++ }, "checksum"},
		{"file system", func(b []byte) { b[16] ^= 1 }, "NV data volume"},
		{"store kind", func(b []byte) { b[0x48] ^= 1 }, "not an authenticated store"},
		{"store size", func(b []byte) { binary.LittleEndian.PutUint32(b[0x48+16:], 1<<30) }, "variable store of"},
		{"unhealthy", func(b []byte) { b[0x48+21] = 0xff }, "healthy"},
		{"data size", func(b []byte) { binary.LittleEndian.PutUint32(b[0x64+40:], 1<<20) }, "overrun"},
		{"odd name", func(b []byte) { binary.LittleEndian.PutUint32(b[0x64+36:], 3) }, "overrun"},
		{"name NUL", func(b []byte) { b[0x64+60+14] = 'x' }, "NUL-terminated"},
	} {
		b := bytes.Clone(withVar)
		c.edit(b)
		if _, err := Parse(b); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := Parse(withVar[:40]); err == nil {
		t.Error("a file cut short parsed")
	}
}

func TestGUIDText(t *testing.T) {
	g := MustGUID("605dab50-e046-4300-abb6-3dd810dd8b23")
	if g.String() != "605dab50-e046-4300-abb6-3dd810dd8b23" || g[0] != 0x50 || g[8] != 0xab {
		t.Errorf("%s % x", g, g[:])
	}
	for _, bad := range []string{"", "605dab50-e046-4300-abb6-3dd810dd8b2", "605dab50-e046-4300-abb6x3dd810dd8b23", "zzzdab50-e046-4300-abb6-3dd810dd8b23"} {
		if _, err := ParseGUID(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
