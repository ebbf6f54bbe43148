package rootfs

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// packerSDC returns the packer-sdc binary named by PACKER_SDC, or the one
// `make packer-sdc` builds, or skips.
func packerSDC(t *testing.T) string {
	t.Helper()
	sdc := os.Getenv("PACKER_SDC")
	if sdc == "" {
		sdc = "../../bin/packer-sdc"
	}
	sdc, err := filepath.Abs(sdc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(sdc); err != nil {
		t.Skipf("bin/packer-sdc is not built (make packer-sdc); cannot check generated files: %v", err)
	}
	return sdc
}

// TestGeneratedSpecIsCurrent regenerates config.hcl2spec.go into a temp dir
// and compares it with the committed one.
func TestGeneratedSpecIsCurrent(t *testing.T) {
	sdc := packerSDC(t)
	out := filepath.Join(t.TempDir(), "config.go")
	cmd := exec.Command(sdc, "mapstructure-to-hcl2", "-type", "Config")
	// packer-sdc loads the package in the working directory and writes
	// GOFILE's name with hcl2spec.go in place of go.
	cmd.Env = append(os.Environ(), "GOFILE="+out, "GOPACKAGE=rootfs")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("packer-sdc: %v\n%s", err, b)
	}
	compareFiles(t, filepath.Join(filepath.Dir(out), "config.hcl2spec.go"), "config.hcl2spec.go", "go generate ./builder/rootfs/")
}

// TestGeneratedDocsAreCurrent renders the docs into a temp file and compares
// them with docs/builder-rootfs.mdx.
func TestGeneratedDocsAreCurrent(t *testing.T) {
	sdc := packerSDC(t)
	out := filepath.Join(t.TempDir(), "builder-rootfs.mdx")
	if b, err := exec.Command("sh", "gendocs.sh", sdc, out).CombinedOutput(); err != nil {
		t.Fatalf("gendocs.sh: %v\n%s", err, b)
	}
	compareFiles(t, out, "../../docs/builder-rootfs.mdx", "go generate ./builder/rootfs/")
}

func compareFiles(t *testing.T, fresh, committed, fix string) {
	t.Helper()
	a, err := os.ReadFile(fresh)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(committed)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Errorf("%s is stale; run %s", committed, fix)
	}
}
