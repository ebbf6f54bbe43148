package trivy

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/target"
)

// The vulnerability matching reads the distribution and the packages as
// the facts do, even where the files are awkward: an /etc/os-release that
// links to nothing (the fallback is read by both) and a held package.
func TestInventoryReadsWhatTheFactsRead(t *testing.T) {
	root := bookworm(t)
	if err := os.Remove(filepath.Join(root, "etc/os-release")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/usr/lib/os-release.gone", filepath.Join(root, "etc/os-release")); err != nil {
		t.Fatal(err)
	}
	put(t, root, "usr/lib/os-release", readTestdata(t, "bookworm/os-release"))

	fsys, closer, err := sysroot.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	inv, err := readInventory(fsys)
	if err != nil {
		t.Fatal(err)
	}
	f, err := target.Rootfs(context.Background(), root, target.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if f.OS == nil || string(inv.os.Family) != f.OS.ID || inv.os.Name != f.OS.VersionID {
		t.Errorf("trivy reads %s %s, the facts %+v", inv.os.Family, inv.os.Name, f.OS)
	}
	if len(inv.pkgs) != len(f.Packages) || len(inv.pkgs) == 0 {
		t.Fatalf("trivy reads %d packages, the facts %d", len(inv.pkgs), len(f.Packages))
	}
	for i, p := range f.Packages {
		got := inv.pkgs[i]
		if got.Name != p.Name || got.Arch != p.Arch || got.ID != p.Name+"@"+p.Version {
			t.Errorf("package %d: trivy reads %s %s %s, the facts %+v", i, got.Name, got.Arch, got.ID, p)
		}
	}
}
