package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// TestRealScanOutputsValidate scans the weak sample tree, whose nginx and
// sshd findings have lines, and hands the SARIF and JUnit reports to the
// validators users run on them: the SARIF Multitool and xmllint with the
// Jenkins junit-10 rules.
func TestRealScanOutputsValidate(t *testing.T) {
	dir := t.TempDir()
	sarif, junit := filepath.Join(dir, "weak.sarif"), filepath.Join(dir, "weak.junit")
	o := gpuhost(t, "", "scan", "rootfs", weak, "--params", params, "--format", "json",
		"--report", "sarif="+sarif, "--report", "junit="+junit)
	if o.code != 1 {
		t.Fatalf("exit %d, want 1\nstderr: %s", o.code, o.stderr)
	}
	data, err := os.ReadFile(sarif)
	if err != nil {
		t.Fatal(err)
	}
	var log struct {
		Runs []struct {
			OriginalURIBaseIDs map[string]struct {
				URI string `json:"uri"`
			} `json:"originalUriBaseIds"`
			Results []struct {
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI       string `json:"uri"`
							URIBaseID string `json:"uriBaseId"`
						} `json:"artifactLocation"`
						Region *struct {
							StartLine int `json:"startLine"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"locations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(data, &log); err != nil {
		t.Fatal(err)
	}
	abs, _ := filepath.Abs(weak)
	if root := log.Runs[0].OriginalURIBaseIDs["IMAGEROOT"].URI; root != "file://"+abs+"/" {
		t.Errorf("IMAGEROOT is %q, want file://%s/", root, abs)
	}
	regions := 0
	for _, r := range log.Runs[0].Results {
		art := r.Locations[0].PhysicalLocation.ArtifactLocation
		if art.URIBaseID != "IMAGEROOT" || strings.HasPrefix(art.URI, "/") || strings.Contains(art.URI, abs) {
			t.Errorf("artifact %+v names the build machine", art)
		}
		if r.Locations[0].PhysicalLocation.Region != nil {
			regions++
		}
	}
	if regions == 0 {
		t.Error("no result has a region, though nginx's findings carry their lines")
	}
	testutil.ValidateSARIF(t, sarif)

	xmllint := testutil.Tool(t, "xmllint", "libxml2-utils")
	testutil.Run(t, time.Minute, xmllint, "--noout", "--schema", filepath.Join("..", "..", "render", "report", "testdata", "junit-10.xsd"), junit)
}
