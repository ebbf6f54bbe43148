package packages

import (
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

func FuzzDpkgStatus(f *testing.F) {
	f.Add([]byte(collecttest.UbuntuDpkg))
	f.Add([]byte("Package: a\nStatus: hold ok installed\nVersion: 1\n"))
	f.Add([]byte(" x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		pkgs, err := ParseDpkgStatus(data)
		if err != nil {
			if !strings.Contains(err.Error(), "line ") {
				t.Errorf("error without a line: %v", err)
			}
			return
		}
		for i, p := range pkgs {
			if p.Name == "" || p.Version == "" {
				t.Errorf("empty name or version: %+v", p)
			}
			if i > 0 && pkgs[i-1].Name > p.Name {
				t.Errorf("not sorted at %d", i)
			}
		}
	})
}
