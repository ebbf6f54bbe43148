package params

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/policies"
)

func TestValidateParams(t *testing.T) {
	schema, err := policies.ParamsSchema()
	if err != nil {
		t.Fatal(err)
	}
	defaults, err := policies.DefaultParams()
	if err != nil {
		t.Fatal(err)
	}
	params, err := engine.ParseParams(defaults, engine.DefaultParamsFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := Validate(params, schema); err != nil {
		t.Errorf("the default params do not validate: %v", err)
	}

	bad := []struct {
		yaml  string
		field string
	}{
		{`allowed_ports: "22"`, "allowed_ports"},
		{`allowed_ports: [22, "ssh"]`, "allowed_ports.1"},
		{`allowed_ports: [70000]`, "allowed_ports.0"},
		{`pins: {nvidia-smi: 5}`, "pins.nvidia-smi"},
		{`require_hold: "yes"`, "require_hold"},
	}
	for _, c := range bad {
		p, err := engine.ParseParams([]byte(c.yaml), "bad.yaml")
		if err != nil {
			t.Fatal(err)
		}
		err = Validate(p, schema)
		if err == nil {
			t.Errorf("%s: accepted", c.yaml)
			continue
		}
		if !strings.Contains(err.Error(), c.field+":") {
			t.Errorf("%s: error %q does not name %s", c.yaml, err, c.field)
		}
	}
	// Keys the schema does not describe are another pack's business.
	p, _ := engine.ParseParams([]byte("my_pack_knob: 3\nallowed_ports: [22, 443]\n"), "ok.yaml")
	if err := Validate(p, schema); err != nil {
		t.Errorf("extra key refused: %v", err)
	}

	if err := Validate(p, []byte("{")); err == nil {
		t.Error("a broken schema validated")
	}
	if err := Validate(p, []byte(`{"$ref": "https://example.invalid/x.json"}`)); err == nil || !strings.Contains(err.Error(), "may not reference") {
		t.Errorf("a schema referring elsewhere: %v", err)
	}
}

func TestValidateParamsFor(t *testing.T) {
	dir := t.TempDir()
	own := `{"type":"object","properties":{"allowed_ports":{"type":"string"}}}`
	if err := os.WriteFile(filepath.Join(dir, SchemaFile), []byte(own), 0o644); err != nil {
		t.Fatal(err)
	}
	str := map[string]any{"allowed_ports": "22"}
	// The pack's own schema wins over the default one.
	if err := ValidateFor(str, "p.yaml", []string{dir}, policies.ParamsSchema); err != nil {
		t.Errorf("own schema not used: %v", err)
	}
	err := ValidateFor(str, "p.yaml", nil, policies.ParamsSchema)
	if err == nil || !strings.Contains(err.Error(), "allowed_ports") || !strings.Contains(err.Error(), "p.yaml") {
		t.Errorf("default schema: err = %v, want one naming p.yaml and allowed_ports", err)
	}
	// A directory without a schema falls back to the default one.
	if err := ValidateFor(str, "p.yaml", []string{t.TempDir()}, policies.ParamsSchema); err == nil {
		t.Error("no own schema: a string port accepted")
	}
}
