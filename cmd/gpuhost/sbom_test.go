//go:build !lean

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSBOMRootfs(t *testing.T) {
	out := filepath.Join(t.TempDir(), "sbom.cdx.json")
	o := gpuhost(t, "", "sbom", "rootfs", hardened, "-o", out)
	if o.code != 0 {
		t.Fatalf("exit %d: %s", o.code, o.stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var bom struct {
		BOMFormat  string `json:"bomFormat"`
		Components []struct {
			Name string `json:"name"`
			PURL string `json:"purl"`
		} `json:"components"`
	}
	if err := json.Unmarshal(data, &bom); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if bom.BOMFormat != "CycloneDX" || len(bom.Components) == 0 {
		t.Fatalf("format %q with %d components", bom.BOMFormat, len(bom.Components))
	}
	for _, c := range bom.Components {
		if c.Name == "libnvidia-ml1" && strings.HasPrefix(c.PURL, "pkg:deb/") {
			return
		}
	}
	t.Errorf("libnvidia-ml1 missing from the SBOM: %+v", bom.Components)
}

func TestSBOMNeedsAPackageDatabase(t *testing.T) {
	o := gpuhost(t, "", "sbom", "rootfs", t.TempDir())
	if o.code != 2 || !strings.Contains(o.stderr, "os-release") && !strings.Contains(o.stderr, "dpkg") {
		t.Errorf("exit %d, stderr %q; want 2 naming the missing file", o.code, o.stderr)
	}
}

func TestTrivyDBMissingIsUntrusted(t *testing.T) {
	o := gpuhost(t, "", "scan", "rootfs", hardened, "--params", params, "--trivy-db", filepath.Join(t.TempDir(), "nodb"), "--format", "json")
	if o.code != 2 {
		t.Fatalf("exit %d, want 2 (a DB that cannot be read makes the scan untrusted)", o.code)
	}
	rep := jsonReport(t, o)
	for _, r := range rep.Results {
		if r.ID == "GH-SC-001" && r.Status != "error" {
			t.Errorf("GH-SC-001 is %s, want error", r.Status)
		}
	}
}
