package jsonschemagen

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/invopop/jsonschema"
)

// fixedSchema reflects v as Generate does and fixes it.
func fixedSchema(t *testing.T, v any) (*jsonschema.Schema, error) {
	t.Helper()
	s := (&jsonschema.Reflector{ExpandedStruct: true}).Reflect(v)
	return s, fixer{defs: s.Definitions, done: map[string]bool{}}.object(s, reflect.TypeOf(v).Elem())
}

type place struct {
	Line int `json:"line"`
}

// What encoding/json writes for nil, and the closed locations map, in the
// schema: the rules the facts types rely on, each on a type of its own.
func TestNullsAndLocations(t *testing.T) {
	type settings struct {
		List      []string         `json:"list"`
		Kept      []string         `json:"kept,omitempty" factschema:"notnull"`
		Flag      *bool            `json:"flag" factschema:"located"`
		Maybe     *bool            `json:"maybe,omitempty"`
		Mode      string           `json:"mode" factschema:"located"`
		Locations map[string]place `json:"locations,omitempty" factschema:"locations"`
	}
	s, err := fixedSchema(t, &settings{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Properties map[string]struct {
			Type                 any            `json:"type"`
			Properties           map[string]any `json:"properties"`
			AdditionalProperties any            `json:"additionalProperties"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	p := got.Properties
	for name, want := range map[string]string{"list": `["array","null"]`, "kept": `"array"`, "flag": `["boolean","null"]`, "maybe": `"boolean"`, "mode": `"string"`} {
		if typ, _ := json.Marshal(p[name].Type); string(typ) != want {
			t.Errorf("%s: type %s, want %s", name, typ, want)
		}
	}
	loc := p["locations"]
	if loc.AdditionalProperties != false || len(loc.Properties) != 2 || loc.Properties["flag"] == nil || loc.Properties["mode"] == nil {
		t.Errorf("locations: keys %v, additionalProperties %v; want flag and mode only", loc.Properties, loc.AdditionalProperties)
	}
}

// A tag the generator cannot honour stops it, naming the field.
func TestRefusesWhatItCannotWrite(t *testing.T) {
	type noLocated struct {
		Locations map[string]place `json:"locations" factschema:"locations"`
	}
	type nullStruct struct {
		Place *place `json:"place"`
	}
	type raw struct {
		Data []byte `json:"data"`
	}
	for v, want := range map[any]string{
		&noLocated{}:  "no field tagged located",
		&nullStruct{}: "nullStruct.Place: a struct that may be null",
		&raw{}:        "raw.Data: a []byte is base64",
	} {
		if _, err := fixedSchema(t, v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%T: error %v, want %q", v, err, want)
		}
	}
}
