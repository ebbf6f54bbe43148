package packages

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

func TestHugeSparseDpkgStatus(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "var/lib/dpkg/status")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, 4<<30); err != nil {
		t.Fatal(err)
	}
	_, err := CollectPackages(context.Background(), collecttest.NewEnv(t, dir, false))
	if err == nil || !strings.Contains(err.Error(), "too large") && !strings.Contains(err.Error(), "exceeds") {
		t.Errorf("4 GB status: %v, want a size error", err)
	}
}

func TestDpkgStatusGarbageNamesFileAndLine(t *testing.T) {
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, map[string]any{
		"var/lib/dpkg/status": "Package: a\nStatus: install ok installed\nVersion: 1\n\nPackage: b\nDescription: x\x00\x01\xff\n",
	})
	_, err := CollectPackages(context.Background(), collecttest.NewEnv(t, dir, false))
	if err == nil || !strings.Contains(err.Error(), "/var/lib/dpkg/status") || !strings.Contains(err.Error(), "line 6") {
		t.Errorf("garbage: %v, want the file and line 6", err)
	}
}
