package packages

import (
	"context"
	"testing"

	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

func TestSyntheticDpkgStatusParses(t *testing.T) {
	pkgs, err := ParseDpkgStatus(SyntheticDpkgStatus(1500))
	if err != nil {
		t.Fatal(err)
	}
	// Every 50th of the generic packages is only config-files.
	if len(pkgs) < 1400 || len(pkgs) >= 1500 {
		t.Errorf("%d packages from 1500 stanzas", len(pkgs))
	}
	if p, ok := Installed(pkgs, "nvidia-container-toolkit"); !ok || !p.Held {
		t.Errorf("toolkit %+v %v", p, ok)
	}
}

func BenchmarkPackages(b *testing.B) {
	dir := b.TempDir()
	collecttest.WriteTree(b, dir, map[string]any{"var/lib/dpkg/status": SyntheticDpkgStatus(1500)})
	env := collecttest.NewEnv(b, dir, false)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := CollectPackages(context.Background(), env); err != nil {
			b.Fatal(err)
		}
	}
}
