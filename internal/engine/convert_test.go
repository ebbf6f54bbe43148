package engine

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/gpuhost/gpuhost/checks/facts"
)

// TestConvertDecodedShares checks that the member-wise conversion gives what
// InterfaceToValue gives, and that a member decoded once for two documents
// is converted once.
func TestConvertDecodedShares(t *testing.T) {
	data, err := os.ReadFile("../../checks/facts/testdata/good-full.json")
	if err != nil {
		t.Fatal(err)
	}
	// The facts memo keeps a member from its second sighting on, so the
	// third decoding shares the second's members.
	var a, b any
	for range 3 {
		a = b
		if b, err = facts.DecodeJSON(data); err != nil {
			t.Fatal(err)
		}
	}
	want, err := ast.InterfaceToValue(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := convertDecoded(a); err != nil {
		t.Fatal(err)
	}
	va, err := convertDecoded(a)
	if err != nil {
		t.Fatal(err)
	}
	vb, err := convertDecoded(b)
	if err != nil {
		t.Fatal(err)
	}
	if va.Compare(want) != 0 || vb.Compare(want) != 0 {
		t.Fatalf("converted %v\nwant %v", va, want)
	}
	pa := va.(ast.Object).Get(ast.InternedTerm("packages")).Value
	pb := vb.(ast.Object).Get(ast.InternedTerm("packages")).Value
	if pa.(*ast.Array) != pb.(*ast.Array) {
		t.Error("the packages both documents share were converted twice")
	}
}

func TestConvertDecodedBounded(t *testing.T) {
	for i := range maxShared + 10 {
		doc := map[string]any{"m": map[string]any{"i": i}}
		for range 2 {
			if _, err := convertDecoded(doc); err != nil {
				t.Fatal(err)
			}
		}
	}
	sharedMembers.Lock()
	n := len(sharedMembers.byAddr)
	sharedMembers.Unlock()
	if n > maxShared {
		t.Errorf("%d members kept, bound %d", n, maxShared)
	}
}

// TestCanonicalSharedAgrees writes the same shared value three times (met,
// kept, reused) and after a longer prefix, and wants appendCanonicalAny's
// text every time.
func TestCanonicalSharedAgrees(t *testing.T) {
	v := map[string]any{"b": []any{"x", json.Number("1"), nil, true}, "a": map[string]any{"c": "d"}}
	want, ok := appendCanonicalAny([]byte("p"), v, 0)
	if !ok {
		t.Fatal("not canonical")
	}
	for i := range 3 {
		got, ok := appendCanonicalShared([]byte("p"), v)
		if !ok || !bytes.Equal(got, want) {
			t.Fatalf("round %d: %q, want %q", i, got, want)
		}
	}
	long := bytes.Repeat([]byte("p"), maxDigestBytes)
	_, wantOK := appendCanonicalAny(long, v, 0)
	if _, ok := appendCanonicalShared(long, v); ok != wantOK {
		t.Errorf("after a long prefix: ok %v, want %v", ok, wantOK)
	}
}
