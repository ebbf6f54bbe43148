package rootfs

import (
	"testing"

	"github.com/gpuhost/gpuhost/builder/internal/sdctest"
)

// TestGeneratedSpecIsCurrent regenerates config.hcl2spec.go into a temp dir
// and compares it with the committed one.
func TestGeneratedSpecIsCurrent(t *testing.T) {
	spec := sdctest.Spec(t, sdctest.Find(t), "config.go", "rootfs", "Config,EncryptionConfig")
	sdctest.Same(t, spec, "config.hcl2spec.go", "go generate ./builder/rootfs/")
}

// TestGeneratedDocsAreCurrent renders the docs into a temp file and compares
// them with docs/builder-rootfs.mdx.
func TestGeneratedDocsAreCurrent(t *testing.T) {
	docs := sdctest.Docs(t, "builder-rootfs.mdx", "sh", "gendocs.sh", sdctest.Find(t))
	sdctest.Same(t, docs, "../../docs/builder-rootfs.mdx", "go generate ./builder/rootfs/")
}
