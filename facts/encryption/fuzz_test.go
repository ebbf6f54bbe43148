package encryption

import (
	"bytes"
	"strings"
	"testing"
)

func FuzzCrypttab(f *testing.F) {
	f.Add([]byte("cryptroot UUID=1 none luks,discard\n# c\n"))
	f.Add([]byte("a b c d e\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ct, err := parseCrypttab(data)
		if err != nil {
			return
		}
		for _, e := range ct {
			if e.Name == "" || e.Device == "" || e.Options == nil {
				t.Errorf("bad entry %+v", e)
			}
		}
	})
}

func FuzzLUKSHeader(f *testing.F) {
	v1 := make([]byte, luks1HeaderSize)
	copy(v1, luksMagic)
	v1[7] = 1
	copy(v1[8:], "aes")
	copy(v1[40:], "xts-plain64")
	v1[111] = 64
	f.Add(v1)
	v2 := make([]byte, 16<<10)
	copy(v2, luksMagic)
	v2[7] = 2
	v2[14] = 0x40 // hdr_size 16 KiB
	copy(v2[4096:], `{"keyslots":{"0":{"key_size":64}},"segments":{"0":{"type":"crypt","encryption":"aes-xts-plain64"}},"digests":{"0":{"keyslots":["0"],"segments":["0"]}}}`)
	f.Add(v2)
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := readLUKSHeader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		if h.Version != 1 && h.Version != 2 || h.Cipher == "" || h.KeyBits <= 0 || h.KeyBits > 8192 {
			t.Errorf("accepted %+v", h)
		}
	})
}

func FuzzLVMMetadata(f *testing.F) {
	f.Add([]byte(ubuntuVG("/dev/mapper/dm_crypt-0")))
	f.Add([]byte("vg { logical_volumes { lv { segment1 { stripes = [\"pv0\", 0] } } } }"))
	f.Fuzz(func(t *testing.T, data []byte) {
		vg, err := parseLVMMetadata(data)
		if err != nil {
			if !strings.Contains(err.Error(), "line ") && !strings.Contains(err.Error(), "volume") {
				t.Errorf("error without a place: %v", err)
			}
			return
		}
		if vg.Name == "" {
			t.Error("volume group without a name")
		}
		for name, lv := range vg.LVs {
			if len(lv.PVs) == 0 && len(lv.On) == 0 {
				t.Errorf("LV %s lies nowhere", name)
			}
			for _, k := range lv.PVs {
				if _, ok := vg.PVs[k]; !ok {
					t.Errorf("LV %s on unknown PV %s", name, k)
				}
			}
		}
	})
}
