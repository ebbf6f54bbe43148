package gpu

import (
	"path"
	"testing"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/gpuhost/gpuhost/manifest"
)

// FuzzTargetOutput feeds what a hostile target could print to the parsers of
// its answers: the file listing for the manifest and the plan's step markers.
func FuzzTargetOutput(f *testing.F) {
	f.Add("/var/lib/dpkg/status\n/etc/ssh/sshd_config\n")
	f.Add("/etc/shadow\n")
	f.Add("==> gpuhost-gpu step: install driver\r\n")
	f.Add("/etc/modprobe.d/../shadow.conf\n\x00\n")
	f.Fuzz(func(t *testing.T, out string) {
		names, err := listRemote(t.Context(), &packersdk.MockCommunicator{StartStdout: out})
		if err == nil {
			for _, n := range names {
				if path.Clean(n) != n || (n != manifest.DpkgStatus && !manifest.MatchesConfigFile(n)) {
					t.Fatalf("accepted %q", n)
				}
			}
		}
		var s stepTracker
		if _, err := s.Write([]byte(out)); err != nil {
			t.Fatal(err)
		}
		if len(s.buf) > 4096 {
			t.Fatalf("line buffer grew to %d", len(s.buf))
		}
	})
}
