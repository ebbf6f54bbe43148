package scan

import (
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/zclconf/go-cty/cty"

	"github.com/gpuhost/gpuhost/builder/internal/evaluation"
	"github.com/gpuhost/gpuhost/builder/internal/sdctest"
	"github.com/gpuhost/gpuhost/containers/trivy"
)

// executable is an ELF file that exists wherever the tests run: the test
// binary itself.
func executable(t *testing.T) string {
	t.Helper()
	p, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDecodeListsEveryProblem(t *testing.T) {
	_, err := Decode(map[string]interface{}{
		"gpuhost_binary":  "config_test.go",
		"facts_args":      []string{"scan", "image", "x.qcow2"},
		"execute_command": "sudo -n {{.Path}} facts host {{.Nope}}",
		"remote_folder":   "tmp dir",
		"report_prefix":   "out/",
		"fail_on":         "severe",
		"reports":         []string{"pdf"},
		"trivy_db":        "config_test.go",
	})
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		"invalid gpuhost-scan configuration",
		"gpuhost_binary: config_test.go is not a Linux executable (no ELF header)",
		`facts_args: ["scan" "image" "x.qcow2"] must start with "facts"`,
		"execute_command: must contain {{.Output}}",
		"execute_command: template: root:1:",
		`remote_folder: "tmp dir" must be an absolute path of plain characters`,
		`report_prefix: "out/" must name a file prefix`,
		`fail_on: "severe" is not one of critical, high, medium, low, info`,
		`reports[0]: "pdf" is not one of`,
		"trivy_db: config_test.go is a regular file, not a directory",
		"trivy_db: the packages are downloaded from the tree the facts were collected from",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
}

func TestDecodeRequiresTheCLI(t *testing.T) {
	for raw, want := range map[string]string{
		"":                 "gpuhost_binary: required",
		"/nonexistent/cli": "gpuhost_binary: open /nonexistent/cli: no such file or directory",
		".":                "gpuhost_binary: . is a directory",
	} {
		cfg := map[string]interface{}{}
		if raw != "" {
			cfg["gpuhost_binary"] = raw
		}
		if _, err := Decode(cfg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("gpuhost_binary %q: err = %v, want %q", raw, err, want)
		}
	}
}

func TestDecodeDefaults(t *testing.T) {
	c, err := Decode(map[string]interface{}{"gpuhost_binary": executable(t), "packer_build_name": "amazon-ebs.ubuntu_2204_gpu"})
	if err != nil {
		t.Fatal(err)
	}
	if c.ExecuteCommand != defaultExecuteCommand || c.RemoteFolder != "/tmp" || !slices.Equal(c.FactsArgs, []string{"facts", "host"}) ||
		c.ReportPrefix != "amazon-ebs.ubuntu_2204_gpu" || c.FailOn != "high" || !slices.Equal(c.Reports, evaluation.DefaultReports("")) {
		t.Errorf("defaults: %+v", c)
	}
	got, err := c.render(command{Path: "/tmp/gpuhost-scan-1", Args: shellQuote(c.FactsArgs), Output: "/tmp/gpuhost-scan-1.facts.json"})
	if want := `sudo -n '/tmp/gpuhost-scan-1' 'facts' 'host' > '/tmp/gpuhost-scan-1.facts.json'`; err != nil || got != want {
		t.Errorf("execute_command renders %q (%v), want %q", got, err, want)
	}
	for build, want := range map[string]string{"": "gpuhost", "a/b c": "a_b_c", "..": "gpuhost", "googlecompute.gpu-2404": "googlecompute.gpu-2404"} {
		if got := buildPrefix(build); got != want {
			t.Errorf("buildPrefix(%q) = %q, want %q", build, got, want)
		}
	}
}

func TestShellQuote(t *testing.T) {
	if got, want := shellQuote([]string{"facts", "rootfs", "/mnt/it's here"}), `'facts' 'rootfs' '/mnt/it'\''s here'`; got != want {
		t.Errorf("shellQuote = %s, want %s", got, want)
	}
}

func TestHostRoot(t *testing.T) {
	for args, want := range map[string]string{
		"facts host":                    "/",
		"facts host --host-root /host":  "/host",
		"facts host --host-root=/mnt/h": "/mnt/h",
		"facts host --probe-timeout 5s": "/",
	} {
		if got := hostRoot(strings.Fields(args)); got != want {
			t.Errorf("hostRoot(%s) = %q, want %q", args, got, want)
		}
	}
}

// TestPrepareCompilesThePack: a broken params file fails Prepare, as the
// gate's Configure does, before any instance is launched.
func TestPrepareCompilesThePack(t *testing.T) {
	bad := t.TempDir() + "/params.yaml"
	if err := os.WriteFile(bad, []byte("pinz: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := new(Provisioner).Prepare(map[string]interface{}{"gpuhost_binary": executable(t), "params": bad})
	if err == nil || !strings.Contains(err.Error(), "pinz") {
		t.Errorf("Prepare = %v; want the unknown params key named", err)
	}
	err = new(Provisioner).Prepare(map[string]interface{}{"gpuhost_binary": executable(t), "trivy_db": t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "trivy_db is set, but this build of the plugin has no vulnerability matching") {
		t.Errorf("Prepare = %v; want trivy_db refused without a matcher", err)
	}
}

func TestConfigSpecCoversEveryField(t *testing.T) {
	var p Provisioner
	spec := p.ConfigSpec()
	for _, key := range []string{"gpuhost_binary", "facts_args", "execute_command", "remote_folder", "report_prefix",
		"policy", "extend_policy", "verification_key", "verification_alg", "params", "waivers", "fail_on", "fail_on_skip",
		"trivy_db", "vulnerabilities", "reports"} {
		if _, ok := spec[key]; !ok {
			t.Errorf("HCL2 spec lacks %s", key)
		}
	}
}

// TestGeneratedFilesAreCurrent regenerates config.hcl2spec.go and
// docs/provisioner-scan.mdx and compares them with the committed ones.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	sdc := sdctest.Find(t)
	const fix = "go generate ./builder/scan"
	sdctest.Same(t, sdctest.Spec(t, sdc, "config.go", "scan", "Config"), "config.hcl2spec.go", fix)
	sdctest.Same(t, sdctest.Docs(t, "provisioner-scan.mdx", "sh", "gendocs.sh", sdc), "../../docs/provisioner-scan.mdx", fix)
}

// TestAmazonEBSExample decodes the example template's gpuhost-scan block
// through the provisioner's HCL2 spec, as Packer does, and prepares it:
// `packer validate -syntax-only`, all this machine can run on a template
// for AWS, does not look inside a plugin's block.
func TestAmazonEBSExample(t *testing.T) {
	file, diags := hclparse.NewParser().ParseHCLFile("../../images/amazon-ebs-gpu.pkr.hcl")
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	top, _, diags := file.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "build"}}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var blocks []*hcl.Block
	for _, build := range top.Blocks {
		content, _, diags := build.Body.PartialContent(&hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{{Type: "provisioner", LabelNames: []string{"type"}}}})
		if diags.HasErrors() {
			t.Fatal(diags)
		}
		for _, b := range content.Blocks {
			if b.Labels[0] == "gpuhost-scan" {
				blocks = append(blocks, b)
			}
		}
	}
	if len(blocks) != 1 {
		t.Fatalf("%d gpuhost-scan provisioners in the example; want the one that gates the AMI", len(blocks))
	}
	vars := cty.ObjectVal(map[string]cty.Value{
		"gpuhost_binary": cty.StringVal(executable(t)),
		"gate_fail_on":   cty.StringVal("high"),
		"trivy_db":       cty.StringVal(t.TempDir()),
	})
	var p Provisioner
	// path.root is the template's directory, where its params and waivers are.
	root := cty.ObjectVal(map[string]cty.Value{"root": cty.StringVal("../../images")})
	val, diags := hcldec.Decode(blocks[0].Body, hcldec.ObjectSpec(p.ConfigSpec()), &hcl.EvalContext{Variables: map[string]cty.Value{"var": vars, "path": root}})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	p.Vulnerabilities = trivy.VulnerabilitiesCollector
	if err := p.Prepare(val); err != nil {
		t.Fatal(err)
	}
	if c := p.config; c.FailOnSkip != "critical" || c.TrivyDB == "" || !slices.Equal(c.FactsArgs, []string{"facts", "host"}) || c.ExecuteCommand != defaultExecuteCommand {
		t.Errorf("the example gates with %+v", c)
	}
}
