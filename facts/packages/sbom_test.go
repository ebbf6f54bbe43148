package packages

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

const testSBOM = `{"bomFormat":"CycloneDX","specVersion":"1.6","components":[{"name":"openssl"},{"name":"bash"}]}`

func TestSBOMCollectorReadsTheSBOM(t *testing.T) {
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, map[string]any{"var/lib/gpuhost/sbom.cdx.json": testSBOM})
	sbom, err := CollectSBOM(context.Background(), collecttest.NewEnv(t, dir, false))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(testSBOM))
	want := facts.SBOM{
		Present: true, Path: SBOMPath, Format: "CycloneDX", SpecVersion: "1.6", Components: 2,
		SHA256: hex.EncodeToString(sum[:]),
	}
	if sbom == nil {
		t.Fatal("no sbom facts")
	}
	if got := *sbom; got != want {
		t.Errorf("sbom = %+v, want %+v", got, want)
	}
}

func TestSBOMCollectorAbsentIsAFact(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "sbom.json")
	if err := os.WriteFile(outside, []byte(testSBOM), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, tree := range map[string]map[string]any{
		"no file": {},
		// A link out of the tree resolves inside it, where nothing is.
		"link out": {"var/lib/gpuhost/sbom.cdx.json": collecttest.Symlink(outside)},
	} {
		t.Run(name, func(t *testing.T) {
			root := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
			collecttest.WriteTree(t, root, map[string]any{"etc/": nil})
			collecttest.WriteTree(t, root, tree)
			sbom, err := CollectSBOM(context.Background(), collecttest.NewEnv(t, root, false))
			if err != nil {
				t.Fatal(err)
			}
			if sbom == nil || sbom.Present || sbom.Path != SBOMPath {
				t.Errorf("sbom = %+v, want absent at %s", sbom, SBOMPath)
			}
		})
	}
}

func TestSBOMCollectorBadFileNamesIt(t *testing.T) {
	for name, body := range map[string]string{
		"not json": "{",
		"spdx":     `{"spdxVersion":"SPDX-2.3"}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			collecttest.WriteTree(t, dir, map[string]any{"var/lib/gpuhost/sbom.cdx.json": body})
			_, err := CollectSBOM(context.Background(), collecttest.NewEnv(t, dir, false))
			if err == nil || !strings.Contains(err.Error(), SBOMPath) {
				t.Errorf("err = %v, want %s named", err, SBOMPath)
			}
		})
	}
	t.Run("fifo", func(t *testing.T) {
		dir := t.TempDir()
		collecttest.WriteTree(t, dir, map[string]any{"var/lib/gpuhost/": nil})
		if err := syscall.Mkfifo(filepath.Join(dir, "var/lib/gpuhost/sbom.cdx.json"), 0o644); err != nil {
			t.Skip(err)
		}
		_, err := CollectSBOM(context.Background(), collecttest.NewEnv(t, dir, false))
		if err == nil || !strings.Contains(err.Error(), SBOMPath) {
			t.Errorf("err = %v, want %s named", err, SBOMPath)
		}
	})
}
