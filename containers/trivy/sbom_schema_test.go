package trivy

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// cdxSchema compiles the CycloneDX 1.6 JSON schema as CycloneDX publishes
// it, from the cyclonedx-go module trivy writes SBOMs with: the BOM schema
// and the two it refers to (SPDX license ids, JSF signatures), each under
// its own $id, so nothing is fetched. Formats are asserted, as a strict
// consumer would.
func cdxSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/CycloneDX/cyclonedx-go").Output()
	if err != nil {
		t.Fatalf("finding the cyclonedx-go module: %v", err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "schema")
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	const base = "http://cyclonedx.org/schema/"
	for id, file := range map[string]string{
		"bom-1.6.schema.json":  "bom-1.6.schema.json",
		"spdx.schema.json":     "spdx.schema.json",
		"jsf-0.82.schema.json": "jsf-0.82.schemax.json",
	} {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if err := c.AddResource(base+id, doc); err != nil {
			t.Fatal(err)
		}
	}
	s, err := c.Compile(base + "bom-1.6.schema.json")
	if err != nil {
		t.Fatalf("compiling the CycloneDX 1.6 schema: %v", err)
	}
	return s
}

// TestSBOMValidatesAgainstCycloneDX16 holds the SBOM gpuhost writes (for
// `gpuhost sbom`, the provisioner's image and the gate's referrer) to the
// CycloneDX 1.6 schema; a document of another spec version fails too.
func TestSBOMValidatesAgainstCycloneDX16(t *testing.T) {
	schema := cdxSchema(t)
	data, err := SBOM(context.Background(), bookworm(t))
	if err != nil {
		t.Fatal(err)
	}
	decodeCDX(t, data)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(doc); err != nil {
		t.Errorf("the SBOM does not validate against CycloneDX 1.6: %v", err)
	}
	// The schema is no rubber stamp: a BOM with a component of no type fails.
	bad, _ := jsonschema.UnmarshalJSON(strings.NewReader(`{"bomFormat": "CycloneDX", "specVersion": "1.6", "components": [{"name": "x"}]}`))
	if schema.Validate(bad) == nil {
		t.Error("the schema accepted a component without a type")
	}
}
