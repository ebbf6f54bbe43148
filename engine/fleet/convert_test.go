package fleet

import (
	"os"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/gpuhost/gpuhost/facts"
)

// TestConvertDecodedShares checks that the member-wise conversion gives what
// InterfaceToValue gives, and that a member decoded once for two documents
// is converted once.
func TestConvertDecodedShares(t *testing.T) {
	data, err := os.ReadFile("../../facts/testdata/good-full.json")
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
	data, err := os.ReadFile("../../facts/testdata/good-full.json")
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

// TestProjectionConvert cuts a document down to what some checks read:
// the objects on the way, the fields read from each GPU, values read whole,
// and whatever stands where an object was expected, whole.
func TestProjectionConvert(t *testing.T) {
	decoded := map[string]any{
		"gpu": map[string]any{
			"devices": []any{map[string]any{"uuid": "GPU-1", "temperature_c": 40, "ecc": map[string]any{"current": true}}, "odd"},
			"reason":  "", "other": true,
		},
		"network":  "not an object",
		"packages": []any{"a"},
		"target":   map[string]any{"kind": "host"},
	}
	p := &projection{}
	for _, it := range []readItem{
		{path: []step{{key: "gpu"}, {key: "devices"}, {each: true}, {key: "uuid"}}, mode: readPresence},
		{path: []step{{key: "gpu"}, {key: "devices"}, {each: true}, {key: "ecc"}}, mode: readValue},
		{path: []step{{key: "gpu"}, {key: "missing"}}, mode: readValue},
		{path: []step{{key: "network"}, {key: "listening"}}, mode: readValue},
		{path: []step{{key: "target"}}, mode: readLength},
	} {
		p.add(it.path, it.mode != readPresence)
	}
	got, err := p.convert(decoded, true)
	if err != nil {
		t.Fatal(err)
	}
	want := ast.MustParseTerm(`{"gpu": {"devices": [{"uuid": "GPU-1", "ecc": {"current": true}}, "odd"]},
		"network": "not an object", "target": {"kind": "host"}}`).Value
	if got.Compare(want) != 0 {
		t.Errorf("got %v, want %v", got, want)
	}
}
