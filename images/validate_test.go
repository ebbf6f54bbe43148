package images

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/containers/seed/seedtest"
	"github.com/gpuhost/gpuhost/containers/trivy"
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

// TestE2EUbuntuTemplatesValidateFully runs `packer validate` on each
// Ubuntu template in full: every component's Prepare, with the gpuhost-ngc
// data source evaluated (-evaluate-datasources) against a stand-in of
// nvcr.io that serves each branch's NGC base (the template's ngc_registry),
// a stub archive keyring, and the demo trivy DB. With the pins file's own
// digests (all zeros until reviewed) the data source must fail naming the
// one the tag resolves to; with the served digests as the pins, validate
// passes. The amazon-ebs template needs the Amazon plugin, which only the
// syntax check above does without.
func TestE2EUbuntuTemplatesValidateFully(t *testing.T) {
	if os.Getenv("GPUHOST_E2E") != "1" {
		t.Skip("needs the Packer binary and the plugin: set GPUHOST_E2E=1 (make e2e)")
	}
	packer, env := installPlugin(t)
	keyring := filepath.Join(t.TempDir(), "ubuntu-archive-keyring.gpg")
	if err := os.WriteFile(keyring, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fx, err := trivy.ReadFixture("trivy-db-demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	db := writeDB(t, fx)
	reg := seedtest.New(t)

	for _, tpl := range []string{"ubuntu-22.04-gpu.pkr.hcl", "ubuntu-24.04-gpu.pkr.hcl"} {
		t.Run(tpl, func(t *testing.T) {
			pins := templatePins(t, tpl)
			bases := value(t, pins, parseHCL(t, pins).Attributes["ngc_bases"].Expr, nil)
			// Each branch's base, served under its nvcr.io name, and the
			// pins a reviewer would write for what is served.
			var served []string
			var first, firstRef, firstDigest string
			for branch, b := range bases.AsValueMap() {
				ref := b.GetAttr("ref").AsString()
				repo, tag, ok := strings.Cut(strings.TrimPrefix(ref, "nvcr.io/"), ":")
				if !ok || !strings.HasPrefix(ref, "nvcr.io/") {
					t.Fatalf("%s: ngc_bases[%s].ref %q is not nvcr.io/REPO:TAG", pins, branch, ref)
				}
				d, err := reg.Push(t, repo, tag, 256, 1).Digest()
				if err != nil {
					t.Fatal(err)
				}
				served = append(served, fmt.Sprintf("%q = { ref = %q, digest = %q }", branch, ref, d.String()))
				if first == "" || branch < first {
					first, firstRef, firstDigest = branch, ref, d.String()
				}
			}
			slices.Sort(served)
			validate := func(extra ...string) (string, error) {
				args := append([]string{"validate", "-evaluate-datasources", "-var-file=" + pins, "-var", "keyring=" + keyring,
					"-var", "trivy_db=" + db, "-var", "ngc_registry=" + reg.Host, "-var", "driver_branch=" + first}, extra...)
				out, err := packerCmd(env, niceSide, packer, append(args, tpl)...).CombinedOutput()
				return string(out), err
			}

			out, err := validate()
			if err == nil || !strings.Contains(out, firstRef) || !strings.Contains(out, firstDigest) {
				t.Errorf("validate with the unreviewed pins: %v; want a failure naming %s at %s\n%s", err, firstRef, firstDigest, out)
			}
			t.Logf("unreviewed pins: %s", lastLines(out, 4))
			out, err = validate("-var", "ngc_bases={"+strings.Join(served, ", ")+"}")
			if err != nil {
				t.Errorf("validate with the served digests pinned: %v\n%s", err, out)
			}
			t.Logf("served digests pinned: %s", lastLines(out, 2))
		})
	}
}

// installPlugin installs the plugin offline, as a user does, where only
// the test's Packer looks; it returns Packer and the environment to run it
// with.
func installPlugin(t *testing.T) (string, []string) {
	t.Helper()
	packer := mustAbs(t, envOr("GPUHOST_PACKER", "../bin/packer"))
	plugin := mustAbs(t, envOr("GPUHOST_PLUGIN", "../bin/packer-plugin-gpuhost"))
	env := append(os.Environ(), "PACKER_PLUGIN_PATH="+t.TempDir(), "CHECKPOINT_DISABLE=1", "PACKER_NO_COLOR=1")
	if out, err := packerCmd(env, niceSide, packer, "plugins", "install", "--path", plugin, "github.com/gpuhost/gpuhost").CombinedOutput(); err != nil {
		t.Fatalf("packer plugins install: %v\n%s", err, out)
	}
	return packer, env
}

// TestE2ELiveIsRefusedWithTheRootfsBuilder: Packer tells the gpuhost-gpu
// provisioner which builder it runs under, and with the gpuhost-rootfs
// builder, whose chroot shares the build machine's kernel, live = true is
// refused at validate; the same template without it validates.
func TestE2ELiveIsRefusedWithTheRootfsBuilder(t *testing.T) {
	if os.Getenv("GPUHOST_E2E") != "1" {
		t.Skip("needs the Packer binary and the plugin: set GPUHOST_E2E=1 (make e2e)")
	}
	packer, env := installPlugin(t)
	const tpl = `packer {
  required_plugins {
    gpuhost = {
      source  = "github.com/gpuhost/gpuhost"
      version = ">= 0.1.0"
    }
  }
}

source "gpuhost-rootfs" "live" {
  suite        = "bookworm"
  distribution = "debian"
  mirror       = "http://127.0.0.1:9/debian"
  output_dir   = "out"
}

build {
  sources = ["source.gpuhost-rootfs.live"]
  provisioner "gpuhost-gpu" {
    driver {
      version = "535.261.03-1"
      source  = "debian"
    }
    hardening {
      ssh {
        host_keys = "keep"
      }
    }
%s  }
}
`
	for _, c := range []struct {
		live, want string
		fails      bool
	}{
		{"    live = true\n", "live: the gpuhost-rootfs builder's target is a chroot", true},
		{"", "The configuration is valid.", false},
	} {
		file := filepath.Join(t.TempDir(), "live.pkr.hcl")
		if err := os.WriteFile(file, fmt.Appendf(nil, tpl, c.live), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := packerCmd(env, niceSide, packer, "validate", file).CombinedOutput()
		// Packer wraps the message at 80 columns.
		if got := strings.Join(strings.Fields(string(out)), " "); (err != nil) != c.fails || !strings.Contains(got, c.want) {
			t.Errorf("live %q: packer validate: %v, want failing %v with %q\n%s", c.live, err, c.fails, c.want, out)
		}
	}
}

// lastLines is the last n non-empty lines of out, for the log.
func lastLines(out string, n int) string {
	lines := slices.DeleteFunc(strings.Split(out, "\n"), func(l string) bool { return strings.TrimSpace(l) == "" })
	return strings.Join(lines[max(len(lines)-n, 0):], " | ")
}
