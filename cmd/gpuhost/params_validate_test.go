package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestScanParamsSchema(t *testing.T) {
	scan := (*app).scanCommand
	bad := filepath.Join(t.TempDir(), "params.yaml")
	if err := os.WriteFile(bad, []byte("allowed_ports: \"22\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := runCommand(t, scan, "rootfs", "testdata/rootfs-hardened", "--params", bad)
	if o.code != 2 || !strings.Contains(o.stderr, "allowed_ports") {
		t.Errorf("a string allowed_ports: exit %d, want 2 naming allowed_ports\n%s", o.code, o.stderr)
	}
	// The demo params are valid, so the scan runs to a verdict.
	o = runCommand(t, scan, "rootfs", "testdata/rootfs-hardened", "--params", "testdata/params-demo.yaml", "--format", "json")
	if o.code == 2 {
		t.Errorf("valid params refused:\n%s", o.stderr)
	}
}
