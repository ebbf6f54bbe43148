package images

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestE2ETemplatesValidate checks every template with the real Packer,
// given the pins file its usage line names: HCL syntax (`validate
// -syntax-only`: a full validate would run the gpuhost-ngc data source
// against NGC) and `packer fmt` style, of the templates and of every pins
// file. The Ubuntu and amazon-ebs templates cannot be built on a machine
// that reaches only Debian's archive, so this is what keeps them honest
// here.
func TestE2ETemplatesValidate(t *testing.T) {
	if os.Getenv("GPUHOST_E2E") != "1" {
		t.Skip("needs the Packer binary: set GPUHOST_E2E=1 (make e2e)")
	}
	packer := mustAbs(t, envOr("GPUHOST_PACKER", "../bin/packer"))
	templates, err := filepath.Glob("*.pkr.hcl")
	if err != nil || len(templates) < 4 {
		t.Fatalf("templates %v, %v: want the two Ubuntu, the Debian and the amazon-ebs ones", templates, err)
	}
	for _, tpl := range templates {
		t.Run(tpl, func(t *testing.T) {
			pins := templatePins(t, tpl)
			for _, args := range [][]string{{"validate", "-syntax-only", "-var-file=" + pins, tpl}, {"fmt", "-check", tpl}, {"fmt", "-check", pins}} {
				cmd := exec.Command(packer, args...)
				cmd.Env = append(os.Environ(), "CHECKPOINT_DISABLE=1")
				if out, err := cmd.CombinedOutput(); err != nil {
					t.Errorf("packer %v: %v\n%s", args, err, out)
				}
			}
		})
	}
}
