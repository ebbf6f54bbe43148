package packages_test

import (
	"context"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/facts/packages"
)

// What CollectSBOM returns is what the document's schema takes.
func TestSBOMFactsValidate(t *testing.T) {
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, map[string]any{"var/lib/gpuhost/sbom.cdx.json": `{"bomFormat":"CycloneDX","specVersion":"1.6","components":[{"name":"openssl"}]}`})
	sbom, err := packages.CollectSBOM(context.Background(), collecttest.NewEnv(t, dir, false))
	if err != nil {
		t.Fatal(err)
	}
	f := facts.New(facts.KindImage, dir, time.Unix(0, 0))
	f.SBOM = sbom
	if err := facts.Validate(*f); err != nil {
		t.Errorf("facts do not validate: %v", err)
	}
}
