package ovmfvars

import (
	"bytes"
	"testing"
)

// FuzzParse: any bytes either parse into a store whose variables lie
// inside it, or are refused; none panics. A store that parses takes a
// variable and parses again with it.
func FuzzParse(f *testing.F) {
	empty := emptyStore(256)
	f.Add(empty)
	s, _ := Parse(bytes.Clone(empty))
	_ = s.Set("MokList", ShimLock, MokListAttributes, []byte("seed"))
	f.Add(bytes.Clone(s.Bytes()))
	f.Add(empty[:0x50])
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := Parse(bytes.Clone(b))
		if err != nil {
			return
		}
		for _, v := range s.Variables() {
			if v.Offset < 0 || v.Offset+varHeaderSize+len(v.Data) > len(b) {
				t.Fatalf("variable %q at %d with %d bytes lies outside the %d-byte file", v.Name, v.Offset, len(v.Data), len(b))
			}
		}
		if s.Free() < 0 {
			t.Fatalf("negative free space %d", s.Free())
		}
		if err := s.Set("MokList", ShimLock, MokListAttributes, []byte{1, 2, 3}); err != nil {
			return
		}
		back, err := Parse(bytes.Clone(s.Bytes()))
		if err != nil {
			t.Fatalf("a store that parsed does not parse with a variable added: %v", err)
		}
		if v, ok := back.Get("MokList", ShimLock); !ok || !bytes.Equal(v.Data, []byte{1, 2, 3}) {
			t.Fatalf("the added variable reads back as %+v (%v)", v, ok)
		}
	})
}
