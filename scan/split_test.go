package scan

import (
	"bytes"
	"encoding/json/jsontext"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// splitAll returns every value the splitter cuts from data, reading it a
// byte at a time when slow is set, so that values straddle buffer refills.
func splitAll(data []byte, max int, slow bool) ([][]byte, error) {
	var r io.Reader = bytes.NewReader(data)
	if slow {
		r = iotest.OneByteReader(r)
	}
	s := NewSplitter(r, max)
	var out [][]byte
	for {
		v, err := s.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, bytes.Clone(v))
	}
}

// referenceSplit is jsontext's cut of a stream of valid objects and arrays
// (what documents are), or false for anything else: the two may cut a run
// of bare numbers differently ("00"), and the decoder refuses both ways.
func referenceSplit(data []byte) ([][]byte, bool) {
	dec := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	var out [][]byte
	for {
		v, err := dec.ReadValue()
		if errors.Is(err, io.EOF) {
			return out, true
		}
		if err != nil || v.Kind() != '{' && v.Kind() != '[' {
			return nil, false
		}
		out = append(out, bytes.Clone(v))
	}
}

var splitSeeds = []string{
	"", " \n", `{}`, `{"a":"}"}` + "\n" + `{"b":["\"]",{}]}`, `[1,2] "x\\"y" 3 true null`,
	`{"a":{"b":{"c":[[[]]]}}}{"d":1}`, "{\"a\":1}\r\n\t{\"a\":2}\n", `{"a":"\\\\"}{"b":1}`,
	`}`, `{"a":`, `"open`, `{"a":1}}{"b":2}`, `1{"a":1}`, `00`,
}

func TestSplitterCutsLikeTheDecoder(t *testing.T) {
	for _, seed := range splitSeeds {
		want, valid := referenceSplit([]byte(seed))
		for _, slow := range []bool{false, true} {
			got, err := splitAll([]byte(seed), 1<<20, slow)
			if valid && (err != nil || len(got) != len(want)) {
				t.Errorf("%q (slow %v): got %q, %v; want %q", seed, slow, got, err, want)
				continue
			}
			for i := range want {
				if valid && !bytes.Equal(got[i], want[i]) {
					t.Errorf("%q (slow %v): value %d is %q, want %q", seed, slow, i, got[i], want[i])
				}
			}
		}
	}
}

func TestSplitterBoundsAValue(t *testing.T) {
	big := `{"a":"` + strings.Repeat("x", 100) + `"}`
	if _, err := splitAll([]byte(big), 50, false); err == nil || !strings.Contains(err.Error(), "larger than 50 bytes") {
		t.Errorf("a 108-byte value under a 50-byte bound: %v", err)
	}
	if _, err := splitAll([]byte(`{"a":1`), 50, false); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a value cut short: %v, want unexpected EOF", err)
	}
}

// FuzzValueSplitter: on a stream of valid values the splitter cuts exactly
// where the decoder does; on anything it ends, and no value passes the bound.
func FuzzSplitter(f *testing.F) {
	for _, s := range splitSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := splitAll(data, 64, false)
		for _, v := range got {
			if len(v) > 64 {
				t.Fatalf("a %d-byte value passed the 64-byte bound", len(v))
			}
		}
		want, valid := referenceSplit(data)
		if !valid || len(data) > 64 {
			return
		}
		if err != nil || len(got) != len(want) {
			t.Fatalf("%q: got %q, %v; want %q", data, got, err, want)
		}
		for i := range want {
			if !bytes.Equal(got[i], want[i]) {
				t.Fatalf("%q: value %d is %q, want %q", data, i, got[i], want[i])
			}
		}
	})
}
