package manifest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// TestConfigDigestsMatchBuild: the live digests drift compares with are
// exactly what Build records for the same tree.
func TestConfigDigestsMatchBuild(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("var/lib/dpkg/status", "Package: bash\nStatus: install ok installed\nVersion: 5.2-1\nArchitecture: amd64\n\n")
	write("etc/ssh/sshd_config", "PermitRootLogin no\n")
	write("etc/modprobe.d/nouveau.conf", "blacklist nouveau\n")
	fsys, closer, err := sysroot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	got, err := ConfigDigests(context.Background(), fsys)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Build(context.Background(), fsys, Options{Time: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || !slices.Equal(got, m.ConfigFiles) {
		t.Fatalf("ConfigDigests = %v, Build recorded %v", got, m.ConfigFiles)
	}
	if got[1].Path != "/etc/ssh/sshd_config" || got[1].SHA256 == "" {
		t.Errorf("second digest %+v, want /etc/ssh/sshd_config", got[1])
	}
}
