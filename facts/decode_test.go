package facts

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// agree decodes data on the member-by-member path, with and without the
// memo, and on the reference path, and fails unless all three give the same
// tree or the same error.
func agree(t *testing.T, v *validator, data []byte) {
	t.Helper()
	want, wantErr := v.decodeWhole(data)
	cold := *v
	cold.memo, cold.nested = nil, nil
	for _, path := range []struct {
		name string
		v    *validator
	}{{"cold", &cold}, {"memo", v}, {"memo again", v}, {"from the memo", v}} {
		got, err := path.v.decode(data)
		// The validator words a violation from map iteration, so two runs
		// may list the same names in another order; the kind of error
		// (parse or schema) must agree.
		if (err == nil) != (wantErr == nil) || err != nil && errKind(err) != errKind(wantErr) {
			t.Fatalf("%s: error %v, reference error %v\n%q", path.name, err, wantErr, data)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%s: decoded %#v, reference %#v\n%q", path.name, got, want, data)
		}
	}
}

func errKind(err error) string {
	kind, _, _ := strings.Cut(err.Error(), ":")
	return kind
}

func testValidator(t testing.TB) *validator {
	v, err := compile(SchemaJSON)
	if err != nil {
		t.Fatal(err)
	}
	if v.shell == nil {
		t.Fatal("the facts schema is not split; every document takes the slow path")
	}
	if v.fast == nil {
		t.Fatal("the facts schema does not compile for fastCheck; every member takes the slow validator")
	}
	v.memo = newMemberMemo(1 << 20)
	v.nested = newMemberMemo(1 << 20)
	return v
}

// gpuHost is good-full.json as one host of a fleet reports it: its GPU
// reads temp degrees, so the gpu member differs from host to host while
// the NVLink list inside it does not.
func gpuHost(t testing.TB, temp int, links string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "good-full.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	dev := doc["gpu"].(map[string]any)["devices"].([]any)[0].(map[string]any)
	dev["temperature_c"] = temp
	dev["nvlink"] = json.RawMessage(links)
	out, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// eighteenLinks is an H100's NVLink list, long enough for the nested memo.
const eighteenLinks = `[{"link":0,"active":true},{"link":1,"active":true},{"link":2,"active":true},` +
	`{"link":3,"active":true},{"link":4,"active":true},{"link":5,"active":true},{"link":6,"active":true}]`

// TestNestedMemoSharesRepeatedArrays decodes hosts whose gpu member differs
// while its NVLink list repeats: every decode agrees with the reference,
// and from the second sighting on the hosts share one list.
func TestNestedMemoSharesRepeatedArrays(t *testing.T) {
	v := testValidator(t)
	var lists []any
	for temp := range 4 {
		data := gpuHost(t, 40+temp, eighteenLinks)
		agree(t, v, data)
		got, err := v.decode(data)
		if err != nil {
			t.Fatal(err)
		}
		dev := got.(map[string]any)["gpu"].(map[string]any)["devices"].([]any)[0].(map[string]any)
		lists = append(lists, dev["nvlink"])
	}
	first, _ := keyOf(lists[1])
	for i, l := range lists[2:] {
		if k, _ := keyOf(l); k != first {
			t.Errorf("host %d: its NVLink list was parsed again, not shared", i+2)
		}
	}
}

// TestNestedMemoHoldsSyntax feeds bytes the nested memo holds in places
// where the document around them is wrong: the decoder still reads every
// separator, and a repeated name inside a held list is still refused
// (those are other bytes, so no hit).
func TestNestedMemoHoldsSyntax(t *testing.T) {
	v := testValidator(t)
	for temp := range 3 {
		agree(t, v, gpuHost(t, 40+temp, eighteenLinks))
	}
	good := string(gpuHost(t, 50, eighteenLinks))
	for name, doc := range map[string]string{
		"comma for colon":  strings.Replace(good, `"nvlink":[`, `"nvlink",[`, 1),
		"two colons":       strings.Replace(good, `"nvlink":[`, `"nvlink"::[`, 1),
		"no comma after":   strings.Replace(good, `"active":true}],`, `"active":true}]`, 1),
		"repeated name":    strings.Replace(good, `{"link":6,"active":true}`, `{"link":6,"link":6,"active":true}`, 1),
		"list cut short":   strings.Replace(good, `{"link":6,"active":true}]`, `{"link":6,"active":true}`, 1),
		"trailing garbage": good + "]",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := v.decode([]byte(doc)); err == nil {
				t.Fatalf("accepted %s", name)
			}
			agree(t, v, []byte(doc))
		})
	}
}

// TestFastCheckAcceptsExample makes sure the fast path is taken: every
// member of the example document is certain to fastCheck.
func TestFastCheckAcceptsExample(t *testing.T) {
	v := testValidator(t)
	data, err := os.ReadFile(filepath.Join("testdata", "good-full.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := parseJSON(data, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, member := range doc.(map[string]any) {
		if !v.fast[name].fastCheck(member, 0) {
			t.Errorf("%s: fastCheck is not certain of a valid member", name)
		}
	}
}

func TestDecodeAgreesWithReference(t *testing.T) {
	v := testValidator(t)
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	if len(files) == 0 {
		t.Fatal("no testdata documents")
	}
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		agree(t, v, data)
	}
	for _, s := range decodeSeeds {
		agree(t, v, []byte(s))
	}
}

// TestMemoAdmitsOnSecondSighting checks that a member met once is not kept
// and one met twice is.
func TestMemoAdmitsOnSecondSighting(t *testing.T) {
	m := newMemberMemo(1 << 10)
	m.put("x", []byte("once"), 1)
	if _, ok := m.get("x", []byte("once")); ok {
		t.Error("a member met once was kept")
	}
	m.put("x", []byte("once"), 1)
	if _, ok := m.get("x", []byte("once")); !ok {
		t.Error("a member met twice was not kept")
	}
	if _, ok := m.get("y", []byte("once")); ok {
		t.Error("a member was found under another name")
	}
}

// TestMemoBounded fills a small memo past its limit and checks it starts
// over instead of growing.
func TestMemoBounded(t *testing.T) {
	m := newMemberMemo(100)
	for i := range 50 {
		m.put("x", []byte{byte(i), 1, 2, 3, 4, 5, 6, 7, 8, 9}, i)
		m.put("x", []byte{byte(i), 1, 2, 3, 4, 5, 6, 7, 8, 9}, i)
		if m.size > 100 {
			t.Fatalf("memo holds %d bytes, limit 100", m.size)
		}
	}
	if _, ok := m.get("x", []byte{49, 1, 2, 3, 4, 5, 6, 7, 8, 9}); !ok {
		t.Error("the newest member is not in the memo")
	}
	if _, ok := m.get("x", []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}); ok {
		t.Error("the oldest member survived a full memo")
	}
}

// decodeSeeds are documents at the edges of the two parsers: repeated
// names, escapes, invalid UTF-8, trailing data, members that are wrong only
// in their second occurrence.
var decodeSeeds = []string{
	``, `{`, `[]`, `null`, `"x"`, `1`, `{}`, ` {} `, `{} {}`, `{} x`, `{}}`,
	`{"schema":"gpuhost.facts/v1"}`,
	`{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"a","scanned_at":"2025-03-01T12:00:00Z"},"collectors":{}}`,
	`{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"a","scanned_at":"2025-03-01T12:00:00Z"},"collectors":{},"collectors":{"os":{"status":"ok"}}}`,
	`{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"a","scanned_at":"2025-03-01T12:00:00Z"},"collectors":{"os":{"status":"bad"}},"collectors":{}}`,
	`{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"a\u00e9\ud800\"","scanned_at":"2025-03-01T12:00:00Z"},"collectors":{}}`,
	"{\"schema\":\"gpuhost.facts/v1\",\"target\":{\"kind\":\"host\",\"ref\":\"a\xff\xfe\",\"scanned_at\":\"2025-03-01T12:00:00Z\"},\"collectors\":{}}",
	"{\"sch\\u0065ma\":\"gpuhost.facts/v1\",\"target\":{\"kind\":\"host\",\"ref\":\"\",\"scanned_at\":\"2025-03-01T12:00:00Z\"},\"collectors\":{},\"cgroup\":{\"version\":2.0,\"source\":\"x\"}}",
	`{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"a","scanned_at":"2025-03-01T12:00:00Z"},"collectors":{},"cgroup":{"version":1e400,"source":"x"}}`,
	`{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"a","scanned_at":"2025-03-01T12:00:00Z"},"collectors":{},"manifest":{"a":[1,-0.5e-3,true,false,null,{"b":{}}]}}`,
	`{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"a","scanned_at":"2025-03-01T12:00:00Z"},"collectors":{},"kernal":{}}`,
	`{"schema":{},"target":{"kind":"host","ref":"a","scanned_at":"2025-03-01T12:00:00Z"},"collectors":{}}`,
	`{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"a","scanned_at":"2025-03-01T12:00:00Z"},"collectors":{},"cgroup":{"version":-1e-400,"source":"x"}}`,
	`{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"a","scanned_at":"2025-03-01T12:00:00Z"},"collectors":{},"cgroup":{"version":2.0,"source":"x"}}`,
	`{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"a","scanned_at":"2016-12-31T23:59:60Z"},"collectors":{}}`,
	`{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"a","scanned_at":"2025-02-29T12:00:00Z"},"collectors":{}}`,
	`{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"a","scanned_at":"2024-02-29t12:00:00.5+23:59"},"collectors":{}}`,
	`{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"a","scanned_at":"2024-02-29T12:00:00.5+24:00"},"collectors":{}}`,
}

// TestDecodeMemoHeldMembersInBadDocuments holds members in the memo and then
// places their exact bytes in documents broken around them: a trailing
// comma, a missing colon or brace, garbage after a value, a name with a raw
// control character. Skipping a held member must never skip the checks on
// what surrounds it.
func TestDecodeMemoHeldMembersInBadDocuments(t *testing.T) {
	v := testValidator(t)
	const head = `{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"a","scanned_at":"2025-03-01T12:00:00Z"},"collectors":{}`
	const cg = `"cgroup":{"version":2,"source":"x \"}\" ]"}`
	good := head + "," + cg + "}"
	for range 2 {
		if _, err := v.decode([]byte(good)); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := v.memo.get("cgroup", []byte(cg[9:])); !ok {
		t.Fatal("the member is not held after two sightings")
	}
	for _, doc := range []string{
		good,
		head + "," + cg + ",}",
		head + "," + cg + "}}",
		head + "," + cg,
		head + "," + cg + "} x",
		head + "," + cg + "x}",
		head + ",\"cgroup\"" + cg[8:] + "}",
		head + ",\"cgroup\" " + cg[8:] + "}",
		head + ",\"cgroup\"" + cg[9:] + "}",
		head + ",\"cg\troup\"" + cg[8:] + "}",
		head + ",\"cgr\\u006fup\"" + cg[8:] + "}",
		head + " ,\r\n\t" + cg + " }\n",
		head + "," + cg + "," + cg + "}",
		head + "," + cg + ",\"cgroup\":[2]}",
	} {
		agree(t, v, []byte(doc))
	}
}

// TestDecodeRefusesRepeatedNames: a repeated name, at the top or deep in a
// member, is refused on both paths, also after the member's bytes without
// the repetition were seen and held.
func TestDecodeRefusesRepeatedNames(t *testing.T) {
	v := testValidator(t)
	const head = `{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"a","scanned_at":"2025-03-01T12:00:00Z"},"collectors":{}`
	for range 2 {
		if _, err := v.decode([]byte(head + `,"cgroup":{"version":2,"source":"x"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	for _, doc := range []string{
		head + `,"cgroup":{"version":2,"version":1,"source":"x"}}`,
		head + `,"cgroup":{"version":2,"source":"x"},"cgroup":{"version":1,"source":"x"}}`,
		head + `,"cgroup":{"version":2,"source":"x"},"cgr\u006fup":{"version":2,"source":"x"}}`,
	} {
		for _, decode := range []func([]byte) (any, error){v.decode, v.decodeWhole} {
			if _, err := decode([]byte(doc)); err == nil || !strings.Contains(err.Error(), "duplicate") {
				t.Errorf("%s: error %v, want a duplicate name refused", doc, err)
			}
		}
	}
}

// FuzzDecodeJSON holds the fast path to the reference path on any input.
func FuzzDecodeJSON(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	if data, err := os.ReadFile(filepath.Join("testdata", "good-full.json")); err == nil {
		f.Add(data)
	}
	f.Add(gpuHost(f, 41, eighteenLinks))
	v := testValidator(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		agree(t, v, data)
	})
}

// TestFastCheckIntegerBounds covers the int64 shortcut for minimum and
// maximum against the big.Rat path it stands in for.
func TestFastCheckIntegerBounds(t *testing.T) {
	n, err := compileFast(map[string]any{"type": "integer", "minimum": json.Number("0"), "maximum": json.Number("65535")})
	if err != nil {
		t.Fatal(err)
	}
	if !n.intBounds || n.minInt != 0 || n.maxInt != 65535 {
		t.Fatalf("bounds %v %d %d, want int64 bounds 0..65535", n.intBounds, n.minInt, n.maxInt)
	}
	for num, want := range map[string]bool{
		"0": true, "65535": true, "-0": true, "22": true,
		"-1": false, "65536": false, "99999999999999999999": false, "-99999999999999999999": false,
		// Not plain integers: left to the real validator.
		"2.0": false, "1e3": false,
	} {
		if got := n.fastCheck(json.Number(num), 0); got != want {
			t.Errorf("fastCheck(%s) = %v, want %v", num, got, want)
		}
	}
	half, err := compileFast(map[string]any{"type": "number", "minimum": json.Number("0.5")})
	if err != nil {
		t.Fatal(err)
	}
	if half.intBounds {
		t.Fatal("a fractional bound must not take the int64 shortcut")
	}
	for num, want := range map[string]bool{"0.5": true, "1": true, "0": false, "0.49": false} {
		if got := half.fastCheck(json.Number(num), 0); got != want {
			t.Errorf("minimum 0.5: fastCheck(%s) = %v, want %v", num, got, want)
		}
	}
	open, err := compileFast(map[string]any{"type": "integer", "minimum": json.Number("-5")})
	if err != nil {
		t.Fatal(err)
	}
	if !open.fastCheck(json.Number("9223372036854775807"), 0) || open.fastCheck(json.Number("-6"), 0) {
		t.Error("a minimum alone must leave the top open and still bound the bottom")
	}
}

// A document of many small values is refused before it is parsed: a
// decoded value takes tens of times its bytes, and the size limit alone let
// a 64 MiB document of them take gigabytes. A document of the same size
// whose values are large strings is read.
func TestValueLimit(t *testing.T) {
	head := `{"schema":"gpuhost.facts/v1","target":{"kind":"host","ref":"x","scanned_at":"2025-01-02T03:04:05Z"},"collectors":{"os":{"status":"ok"}},"not_judged":[`
	many := head + strings.Repeat(`0,`, MaxValues) + `0]}`
	_, err := DecodeJSON([]byte(many))
	if err == nil || !strings.Contains(err.Error(), "JSON values") {
		t.Errorf("%d values: %v", MaxValues+1, err)
	}
	if n := countValues([]byte(`["a,b\",[{",{"c":[1,2]}]`), 100); n != 6 {
		t.Errorf("countValues counted %d, want 6: the array, the string, the object, the inner array and its two numbers", n)
	}
	// Few values in as many bytes: the count lets it through to the schema,
	// which refuses it for what it is.
	few := head + `"` + strings.Repeat("x", 2*len(many)/3) + `"]}`
	if _, err := DecodeJSON([]byte(few)); err == nil || strings.Contains(err.Error(), "JSON values") {
		t.Errorf("few large values: %v", err)
	}
}
