//go:build linux

package encryption

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

// dmAnswer lays out targets as the kernel answers DM_TABLE_STATUS: the
// dm_ioctl header, then each dm_target_spec with its NUL-terminated
// parameters, aligned to 8 bytes, next counted from the start of the data.
func dmAnswer(targets [][2]string) []byte {
	buf := make([]byte, dmTableBuffer)
	le := binary.NativeEndian
	at := 0
	data := buf[dmIoctlSize:]
	for _, tg := range targets {
		spec := data[at:]
		copy(spec[24:40], tg[0])
		n := copy(spec[dmTargetSpecLen:], tg[1])
		next := at + dmTargetSpecLen + n + 1
		next = (next + 7) &^ 7
		le.PutUint32(spec[20:], uint32(next))
		at = next
	}
	le.PutUint32(buf[12:], uint32(dmIoctlSize+at))
	le.PutUint32(buf[16:], dmIoctlSize)
	le.PutUint32(buf[20:], uint32(len(targets)))
	return buf
}

func TestParseDMTableStatus(t *testing.T) {
	key := strings.Repeat("c0ffee", 16) + strings.Repeat("ab", 16)
	buf := dmAnswer([][2]string{
		{"linear", "8:3 0"},
		{"crypt", "aes-xts-plain64 " + key + " 0 8:3 4096 1 allow_discards"},
	})
	got, err := parseDMTableStatus(buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Type != "linear" || got[1].Type != "crypt" || got[1].Cipher != "aes-xts-plain64" || got[1].KeyBits != 512 || got[1].Err != nil {
		t.Errorf("%+v", got)
	}
	cp := cryptFromTable(got, "kernel")
	if cp.Cipher != "aes-xts-plain64" || cp.KeyBits != 512 || strings.Contains(cp.Error, "c0ffee") {
		t.Errorf("%+v", cp)
	}

	full := dmAnswer(nil)
	binary.NativeEndian.PutUint32(full[28:], dmBufferFullFlag)
	bad := map[string][]byte{
		"short":          make([]byte, 10),
		"buffer full":    full,
		"count too high": func() []byte { b := dmAnswer(nil); binary.NativeEndian.PutUint32(b[20:], 3); return b }(),
		"size past the buffer": func() []byte {
			b := dmAnswer(nil)
			binary.NativeEndian.PutUint32(b[12:], dmTableBuffer+1)
			return b
		}(),
		"unterminated": func() []byte {
			b := dmAnswer([][2]string{{"crypt", "x"}})
			binary.NativeEndian.PutUint32(b[12:], dmIoctlSize+dmTargetSpecLen+1)
			return b
		}(),
	}
	for name, b := range bad {
		if _, err := parseDMTableStatus(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Names the kernel cannot take are refused before any ioctl, and the
// control node must be a character device inside the scanned root.
func TestKernelDMTableRefusesBadNames(t *testing.T) {
	for _, name := range []string{"", strings.Repeat("n", dmNameLen)} {
		if _, err := kernelDMTable("/", name); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
	if _, err := kernelDMTable(t.TempDir(), "x"); err == nil || !strings.Contains(err.Error(), "control node") {
		t.Errorf("tree without /dev/mapper/control: %v", err)
	}
	plain := t.TempDir()
	collecttest.WriteTree(t, plain, map[string]any{"dev/mapper/control": "not a device\n"})
	if _, err := kernelDMTable(plain, "x"); err == nil || !strings.Contains(err.Error(), "not a character device") {
		t.Errorf("plain file as the control node: %v", err)
	}
	// A link, even to a real character device, is not followed.
	linked := t.TempDir()
	collecttest.WriteTree(t, linked, map[string]any{"dev/mapper/control": collecttest.Symlink("/dev/null")})
	if _, err := kernelDMTable(linked, "x"); err == nil || !strings.Contains(err.Error(), "not a character device") {
		t.Errorf("link as the control node: %v", err)
	}
}
