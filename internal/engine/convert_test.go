package engine

import (
	"bytes"
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

// sharedDoc decodes the example document until its members are shared.
func sharedDoc(t *testing.T) map[string]any {
	t.Helper()
	data, err := os.ReadFile("../../checks/facts/testdata/good-full.json")
	if err != nil {
		t.Fatal(err)
	}
	var v any
	for range 3 {
		if v, err = facts.DecodeJSON(data); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := facts.SharedKey(v.(map[string]any)["packages"]); !ok {
		t.Fatal("packages is not shared after three decodings")
	}
	return v.(map[string]any)
}

// TestConvertDecodedKeepsOnlyShared checks that members of documents not
// shared by facts.DecodeJSON never enter the cache.
func TestConvertDecodedKeepsOnlyShared(t *testing.T) {
	sharedMembers.Lock()
	before := len(sharedMembers.byKey)
	sharedMembers.Unlock()
	for i := range 10 {
		if _, err := convertDecoded(map[string]any{"m": map[string]any{"i": i}, "l": []any{i}}); err != nil {
			t.Fatal(err)
		}
	}
	sharedMembers.Lock()
	after := len(sharedMembers.byKey)
	sharedMembers.Unlock()
	if after > before {
		t.Errorf("%d unshared members kept", after-before)
	}
}

// TestCanonicalSharedAgrees writes a shared member's text three times and
// after a longer prefix, and wants appendCanonicalAny's text every time.
func TestCanonicalSharedAgrees(t *testing.T) {
	v := sharedDoc(t)["packages"]
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
