package gate

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/reports"
)

// The gate points each result that does not pass at the template block
// that configures what its check judges, the most specific one the
// template has, and leaves passes and checks of other domains alone.
func TestResultsRelateToTheTemplate(t *testing.T) {
	template, err := filepath.Abs("../../images/debian-12-gpu.pkr.hcl")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(template)
	if err != nil {
		t.Fatal(err)
	}
	lineOf := func(prefix string) int {
		for i, l := range strings.Split(string(src), "\n") {
			if strings.HasPrefix(strings.TrimSpace(l), prefix) {
				return i + 1
			}
		}
		t.Fatalf("the template has no %q", prefix)
		return 0
	}
	rep := &reports.Report{Results: []reports.Result{
		{ID: "GH-NET-002", Package: "gpuhost.net.firewall_default_drop", Status: reports.StatusFail},
		{ID: "GH-SSH-002", Package: "gpuhost.ssh.password_authentication", Status: reports.StatusError},
		{ID: "GH-ENC-001", Package: "gpuhost.enc.root_encrypted", Status: reports.StatusWaived},
		{ID: "GH-SC-002", Package: "gpuhost.sc.ngc_bases", Status: reports.StatusFail},
		{ID: "GH-GPU-001", Package: "gpuhost.gpu.driver_version", Status: reports.StatusPass},
		{ID: "GH-XYZ-001", Package: "gpuhost.xyz.other", Status: reports.StatusFail},
	}}
	relateToTemplate(rep, template)
	want := map[string]int{
		"GH-NET-002": lineOf("firewall {"),
		"GH-SSH-002": lineOf("hardening {"), // no ssh block: the hardening block
		"GH-ENC-001": lineOf("encryption {"),
		"GH-SC-002":  lineOf(`dynamic "ngc_images"`),
	}
	for _, r := range rep.Results {
		line, ok := want[r.ID]
		switch {
		case !ok && len(r.Related) > 0:
			t.Errorf("%s (%s): related %+v, want none", r.ID, r.Status, r.Related)
		case ok && (len(r.Related) != 1 || r.Related[0].Line != line || r.Related[0].File != template):
			t.Errorf("%s: related %+v, want %s:%d", r.ID, r.Related, template, line)
		}
	}
	if msg := rep.Results[0].Related[0].Message; !strings.Contains(msg, `provisioner "gpuhost-gpu" > hardening > firewall`) {
		t.Errorf("the related message %q does not name the block", msg)
	}
}

// A template that cannot be read or parsed relates nothing.
func TestUnreadableTemplateRelatesNothing(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.pkr.hcl")
	if err := os.WriteFile(bad, []byte("source {{{"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{bad, filepath.Join(t.TempDir(), "missing.pkr.hcl")} {
		rep := &reports.Report{Results: []reports.Result{{ID: "GH-SSH-002", Package: "gpuhost.ssh.x", Status: reports.StatusFail}}}
		relateToTemplate(rep, file)
		if len(rep.Results[0].Related) != 0 {
			t.Errorf("%s: %+v", file, rep.Results[0].Related)
		}
	}
}
