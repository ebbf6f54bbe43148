package images

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/dynblock"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/function"
	"github.com/zclconf/go-cty/cty/function/stdlib"

	"github.com/gpuhost/gpuhost/builder/gpu"
	"github.com/gpuhost/gpuhost/policies"
	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan/waivers"
)

// templatePlan is what one template's gpuhost-gpu block renders to, and
// the params and waivers its gate judges the result with.
type templatePlan struct {
	cfg              *gpu.Config
	plan             string
	params, waivers  string
	hostname, target string
	// gate is the gpuhost-gate post-processor block, and ctx what its
	// expressions are evaluated in.
	gate *hclsyntax.Block
	ctx  *hcl.EvalContext
}

// renderTemplate decodes a template's gpuhost-gpu provisioner block the way
// Packer does (its variables from their defaults and its pins file, its
// locals, dynamic blocks, the provisioner's own HCL2 spec), then renders the
// plan as the provisioner would. Data sources are what the registry would
// answer: the gpuhost-ngc source's ref with a digest made up from it. What
// the provisioner reads from the target on a cloud builder (distro, kernel)
// is what the template's source image has.
func renderTemplate(t *testing.T, file string) templatePlan {
	t.Helper()
	tp, err := renderTemplateWith(t, file, nil, nil)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return tp
}

// templateVars are a template's variables as `packer build -var-file=PINS`
// sets them: the declared defaults, then what the pins file sets for the
// variables the template declares.
func templateVars(t *testing.T, file string) map[string]cty.Value {
	t.Helper()
	body := parseHCL(t, file)
	vars := map[string]cty.Value{}
	for _, b := range blocks(body, "variable") {
		if a, ok := b.Body.Attributes["default"]; ok {
			vars[b.Labels[0]] = value(t, file, a.Expr, nil)
		}
	}
	pinsFile := templatePins(t, file)
	for name, a := range parseHCL(t, pinsFile).Attributes {
		if len(blocks(body, "variable", name)) > 0 {
			vars[name] = value(t, pinsFile, a.Expr, nil)
		}
	}
	return vars
}

// pinsUsage is how a template's header says which pins file to build with.
var pinsUsage = regexp.MustCompile(`-var-file=images/(pins-[a-z0-9.-]+\.pkrvars\.hcl)`)

// templatePins is the pins file beside a template that its usage line
// passes with -var-file: the tests read what the documented command does,
// so the command cannot name a file that is gone or another family's.
func templatePins(t *testing.T, file string) string {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, m := range pinsUsage.FindAllStringSubmatch(string(data), -1) {
		names[m[1]] = true
	}
	if len(names) != 1 {
		t.Fatalf("%s names pins files %v in its usage; want exactly one -var-file=images/pins-<family>.pkrvars.hcl", file, slices.Sorted(maps.Keys(names)))
	}
	for name := range names {
		return filepath.Join(filepath.Dir(file), name)
	}
	return ""
}

// renderTemplateWith renders as renderTemplate does, with set (when not
// nil) changing the variables first, as -var flags would, and the
// gpuhost-ngc data source answering digests[ref] where given; it returns
// what the provisioner's decoding or the plan refuses.
func renderTemplateWith(t *testing.T, file string, set func(vars map[string]cty.Value), digests map[string]string) (templatePlan, error) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		t.Fatal(err)
	}
	body := parseHCL(t, file)
	vars := templateVars(t, file)
	if set != nil {
		set(vars)
	}
	ctx := &hcl.EvalContext{
		Variables: map[string]cty.Value{
			"var":  cty.ObjectVal(vars),
			"path": cty.ObjectVal(map[string]cty.Value{"root": cty.StringVal(dir)}),
		},
		Functions: packerFunctions,
	}
	locals := map[string]cty.Value{}
	for _, b := range blocks(body, "locals") {
		for name, a := range b.Body.Attributes {
			ctx.Variables["local"] = cty.ObjectVal(locals)
			locals[name] = value(t, file, a.Expr, ctx)
		}
	}
	ctx.Variables["local"] = cty.ObjectVal(locals)
	data := map[string]cty.Value{}
	for _, b := range blocks(body, "data") {
		if b.Labels[0] != "gpuhost-ngc" {
			t.Fatalf("%s: data source %s: the test knows only gpuhost-ngc", file, b.Labels[0])
		}
		ref := value(t, file, b.Body.Attributes["ref"].Expr, ctx)
		sum := sha256.Sum256([]byte(ref.AsString()))
		digest := "sha256:" + hex.EncodeToString(sum[:])
		if d, ok := digests[ref.AsString()]; ok {
			digest = d
		}
		data[b.Labels[1]] = cty.ObjectVal(map[string]cty.Value{"ref": ref, "digest": cty.StringVal(digest)})
	}
	if len(data) > 0 {
		ctx.Variables["data"] = cty.ObjectVal(map[string]cty.Value{"gpuhost-ngc": cty.ObjectVal(data)})
	}

	var tp templatePlan
	builds := blocks(body, "build")
	if len(builds) != 1 {
		t.Fatalf("%s has %d build blocks, want 1", file, len(builds))
	}
	build := builds[0]
	spec := hcldec.ObjectSpec((&gpu.Provisioner{}).ConfigSpec())
	var provisioners int
	for _, p := range build.Body.Blocks {
		switch {
		case p.Type == "provisioner" && p.Labels[0] == "gpuhost-gpu":
			provisioners++
			val, diags := hcldec.Decode(dynblock.Expand(p.Body, ctx), spec, ctx)
			if diags.HasErrors() {
				return tp, fmt.Errorf("decoding the gpuhost-gpu block: %s", diags.Error())
			}
			cfg, err := gpu.Decode(val)
			if err != nil {
				return tp, err
			}
			tp.cfg = cfg
		case p.Type == "post-processor" && p.Labels[0] == "gpuhost-gate",
			// A cloud builder's gate judges its instance.
			p.Type == "provisioner" && p.Labels[0] == "gpuhost-scan":
			tp.params = attrString(t, file, p, "params", ctx)
			tp.waivers = attrString(t, file, p, "waivers", ctx)
			if p.Type == "post-processor" {
				tp.gate, tp.ctx = p, ctx
			}
		}
	}
	if provisioners != 1 {
		t.Fatalf("%s has %d gpuhost-gpu provisioners, want 1", file, provisioners)
	}
	cfg := *tp.cfg
	if cfg.Distro.ID == "" {
		// amazon-ebs: the source AMI filter names jammy.
		cfg.Distro = gpu.Distro{ID: "ubuntu", VersionID: "22.04", Codename: "jammy"}
	}
	if cfg.TargetKernel == "" {
		cfg.TargetKernel = map[string]string{"22.04": "5.15.0-153-generic", "24.04": "6.8.0-45-generic"}[cfg.Distro.VersionID]
	}
	tp.plan, err = gpu.RenderPlan(cfg)
	if err != nil {
		return tp, err
	}
	if h := tp.cfg.Hardening; h != nil {
		tp.hostname = h.Hostname
	}
	return tp, nil
}

func parseHCL(t *testing.T, file string) *hclsyntax.Body {
	t.Helper()
	f, diags := hclparse.NewParser().ParseHCLFile(file)
	if diags.HasErrors() {
		t.Fatalf("%s: %s", file, diags.Error())
	}
	return f.Body.(*hclsyntax.Body)
}

// blocks returns body's blocks of a type whose leading labels are labels.
func blocks(body *hclsyntax.Body, typ string, labels ...string) []*hclsyntax.Block {
	var out []*hclsyntax.Block
	for _, b := range body.Blocks {
		if b.Type == typ && len(b.Labels) >= len(labels) && slices.Equal(b.Labels[:len(labels)], labels) {
			out = append(out, b)
		}
	}
	return out
}

func value(t *testing.T, file string, expr hcl.Expression, ctx *hcl.EvalContext) cty.Value {
	t.Helper()
	v, diags := expr.Value(ctx)
	if diags.HasErrors() {
		t.Fatalf("%s: %s", file, diags.Error())
	}
	return v
}

func attrString(t *testing.T, file string, b *hclsyntax.Block, name string, ctx *hcl.EvalContext) string {
	t.Helper()
	a, ok := b.Body.Attributes[name]
	if !ok {
		t.Fatalf("%s: %s %q sets no %s", file, b.Type, b.Labels[0], name)
	}
	return value(t, file, a.Expr, ctx).AsString()
}

// packerFunctions are the HCL functions of Packer's that the templates call.
var packerFunctions = map[string]function.Function{"abspath": abspath, "contains": stdlib.ContainsFunc}

// abspath is Packer's function of that name.
var abspath = function.New(&function.Spec{
	Params: []function.Parameter{{Name: "path", Type: cty.String}},
	Type:   function.StaticReturnType(cty.String),
	Impl: func(args []cty.Value, _ cty.Type) (cty.Value, error) {
		p, err := filepath.Abs(args[0].AsString())
		return cty.StringVal(p), err
	},
})

// Every template hardens its host with the gpuhost-gpu provisioner's
// hardening block, so every rendered plan carries the hardening steps;
// and what the plan opens and grants is what the template's params hold it
// to: the firewall's ports are allowed ports, the role groups are the
// params' roles, the audit rules watch what the params ask. Each template
// names its params and waivers, and each waiver says why at length and
// covers the image (or the cloud builder's instance) the template makes.
func TestTemplatesRenderHardenedPlans(t *testing.T) {
	templates, err := filepath.Glob("*.pkr.hcl")
	if err != nil || len(templates) < 4 {
		t.Fatalf("templates %v, %v: want the two Ubuntu, the Debian and the amazon-ebs ones", templates, err)
	}
	defaults, err := policies.DefaultParams()
	if err != nil {
		t.Fatal(err)
	}
	for _, tpl := range templates {
		t.Run(tpl, func(t *testing.T) {
			tp := renderTemplate(t, tpl)
			h := tp.cfg.Hardening
			if h == nil {
				t.Fatal("the gpuhost-gpu block has no hardening block")
			}
			for _, step := range []string{"hardening: packages", "hardening: role groups", "hardening: openssl", "hardening: sshd",
				"hardening: firewall", "hardening: auditd", "hardening: sudo", "hardening: journald", "hardening: baseline", "unattended upgrades"} {
				if !strings.Contains(tp.plan, "\nstep \""+step+"\"\n") {
					t.Errorf("the plan has no step %q", step)
				}
			}
			// A cloud builder's instance is judged as it runs (gpuhost-scan),
			// so its plan loads the hardening into it; an image built in
			// the rootfs builder's chroot gets it when it boots, and its
			// plan must never touch the build machine's kernel.
			applies := strings.Contains(tp.plan, "\nstep \"hardening: apply live\"\n")
			if cloud := tp.gate == nil; applies != cloud || tp.cfg.Live != cloud {
				t.Errorf("live = %v and the plan applies the hardening to the running host: %v; want both %v (judged by gpuhost-scan: %v)", tp.cfg.Live, applies, cloud, cloud)
			}
			for _, want := range []string{"MinProtocol = TLSv1.3", "PasswordAuthentication no", "PermitRootLogin no", "policy drop;", "Storage=persistent", "%" + h.Roles.Admin[0] + " ALL=(ALL:ALL) ALL"} {
				if !strings.Contains(tp.plan, want) {
					t.Errorf("the plan lacks %q", want)
				}
			}

			if tp.params == "" || tp.waivers == "" {
				t.Fatalf("the template's gate is given params %q and waivers %q; want both", tp.params, tp.waivers)
			}
			var params struct {
				AllowedPorts []int               `yaml:"allowed_ports"`
				Roles        map[string][]string `yaml:"roles"`
				WatchPaths   []string            `yaml:"audit_watch_paths"`
				GPUTools     []string            `yaml:"audit_gpu_tools"`
				Pins         map[string]string   `yaml:"pins"`
				Sysctl       map[string]string   `yaml:"sysctl_values"`
				Modules      []string            `yaml:"kernel_modules_disabled"`
			}
			if err := yaml.Unmarshal(defaults, &params); err != nil {
				t.Fatal(err)
			}
			data, err := os.ReadFile(tp.params)
			if err != nil {
				t.Fatal(err)
			}
			// A params file replaces the defaults key by key.
			if err := yaml.Unmarshal(data, &params); err != nil {
				t.Fatalf("parsing %s: %v", tp.params, err)
			}
			if len(params.Pins) == 0 {
				t.Errorf("%s pins nothing", tp.params)
			}
			// The gate's pins are what the template installs at its default
			// branch, CUDA included.
			installs := map[string]string{}
			for _, p := range tp.cfg.Pins() {
				installs[p.Name] = p.Version
			}
			for name, v := range params.Pins {
				if got, ok := installs[name]; !ok || got != v {
					t.Errorf("%s pins %s at %s; the template installs it at %q (installed: %v)", tp.params, name, v, got, ok)
				}
			}
			if v := tp.cfg.CUDA.Version; v != "" {
				if name := "cuda-toolkit-" + strings.ReplaceAll(cudaRelease(v), ".", "-"); params.Pins[name] != v {
					t.Errorf("%s does not pin %s at %s, the CUDA the template installs", tp.params, name, v)
				}
			}
			for _, p := range slices.Concat(h.Firewall.AllowedTCPPorts, h.Firewall.AllowedUDPPorts) {
				if !slices.Contains(params.AllowedPorts, p) {
					t.Errorf("the firewall opens port %d, which %s does not allow (%v)", p, tp.params, params.AllowedPorts)
				}
			}
			for role, groups := range map[string][]string{"admin": h.Roles.Admin, "developer": h.Roles.Developer, "auditor": h.Roles.Auditor} {
				if !slices.Equal(groups, params.Roles[role]) {
					t.Errorf("hardening.roles.%s = %v, but %s judges by %v", role, groups, tp.params, params.Roles[role])
				}
			}
			for _, p := range params.WatchPaths {
				if !slices.Contains(h.Audit.WatchPaths, p) {
					t.Errorf("%s asks for writes to %s to be recorded; the audit rules do not watch it", tp.params, p)
				}
			}
			if !maps.Equal(h.Baseline.Sysctl, params.Sysctl) {
				t.Errorf("hardening.baseline.sysctl = %v, but %s judges by sysctl_values %v", h.Baseline.Sysctl, tp.params, params.Sysctl)
			}
			if !slices.Equal(h.Baseline.DisabledModules, params.Modules) {
				t.Errorf("hardening.baseline.disabled_modules = %v, but %s judges by kernel_modules_disabled %v", h.Baseline.DisabledModules, tp.params, params.Modules)
			}
			for _, p := range params.GPUTools {
				if !slices.Contains(h.Audit.ExecPaths, p) {
					t.Errorf("%s asks for runs of %s to be recorded; the audit rules do not watch it", tp.params, p)
				}
			}

			list, err := waivers.Load(tp.waivers)
			if err != nil {
				t.Fatal(err)
			}
			target := reports.Target{Kind: "image", Ref: "out/" + strings.TrimSuffix(tpl, ".pkr.hcl") + "/rootfs.qcow2", Hostname: tp.hostname}
			if tp.hostname == "" {
				// A cloud builder's gate scans its instance, which EC2 names.
				target = reports.Target{Kind: "host", Ref: "ip-172-31-5-9", Hostname: "ip-172-31-5-9"}
			}
			for _, w := range list {
				if len(strings.Fields(w.Justification)) < 20 {
					t.Errorf("%s: %s: justification too short to say why: %q", tp.waivers, w.ID, w.Justification)
				}
				if !w.Matches(target) {
					t.Errorf("%s: %s does not cover what the template makes (%+v)", tp.waivers, w.ID, target)
				}
			}
		})
	}
}
