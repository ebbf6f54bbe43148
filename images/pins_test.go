package images

import (
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// branchDriven are the variables of a template's pins file that are maps
// keyed by driver branch: whatever the template takes from one must be in
// the others for the same branch.
var branchDriven = []string{"driver_versions", "archive_driver_versions", "cuda_versions", "ngc_bases"}

// ngcBaseTag is NVIDIA's CUDA base image tag: the CUDA release and the
// distribution it is built on.
var ngcBaseTag = regexp.MustCompile(`^nvcr\.io/nvidia/cuda:([0-9]+\.[0-9]+\.[0-9]+)-base-ubuntu([0-9]+\.[0-9]+)$`)

// Every template family has its own pins file, every pins file a
// template, and in each the driver branch selects everything NVIDIA-side:
// the driver, the CUDA release and the NGC base come from maps keyed by
// the same branches. Every branch a file pins renders (so the provisioner
// accepts its driver and CUDA as the compatibility matrix does), the
// template's driver_branch validation admits exactly those branches, the
// NGC base is the branch's CUDA release on the template's distribution
// and pinned by digest; and a pins file that pairs a branch with a CUDA
// newer than it runs is refused before anything is built.
func TestPinsPerTemplateFamily(t *testing.T) {
	templates, err := filepath.Glob("*.pkr.hcl")
	if err != nil || len(templates) < 4 {
		t.Fatalf("templates %v, %v", templates, err)
	}
	files, err := filepath.Glob("pins-*.pkrvars.hcl")
	if err != nil || len(files) < 3 {
		t.Fatalf("pins files %v, %v: want one per family (Ubuntu 22.04, Ubuntu 24.04, Debian 12)", files, err)
	}
	used := map[string][]string{}
	for _, tpl := range templates {
		used[templatePins(t, tpl)] = append(used[templatePins(t, tpl)], tpl)
	}
	for _, f := range files {
		if len(used[f]) == 0 {
			t.Errorf("%s is read by no template", f)
		}
	}
	if got := used["pins-ubuntu-22.04.pkrvars.hcl"]; !slices.Equal(got, []string{"amazon-ebs-gpu.pkr.hcl", "ubuntu-22.04-gpu.pkr.hcl"}) {
		t.Errorf("pins-ubuntu-22.04.pkrvars.hcl is read by %v; want the Ubuntu 22.04 template and the amazon-ebs one, whose AMI is jammy", got)
	}

	for _, tpl := range templates {
		t.Run(tpl, func(t *testing.T) {
			vars := templateVars(t, tpl)
			if _, ok := vars["driver_versions"]; !ok {
				// The Debian stand-in: one branch, from Debian non-free.
				return
			}
			branches := mapKeys(t, vars["driver_versions"])
			if len(branches) == 0 {
				t.Fatal("driver_versions pins no branch")
			}
			for _, name := range branchDriven {
				v, declared := vars[name]
				if !declared {
					continue
				}
				if got := mapKeys(t, v); !slices.Equal(got, branches) {
					t.Errorf("%s pins branches %v, driver_versions %v: every branch needs all of %v", name, got, branches, branchDriven)
				}
			}
			admits := branchValidation(t, tpl)
			for _, b := range []string{"470", "535", "550", "570", "580", "590"} {
				if got, want := admits(b), slices.Contains(branches, b); got != want {
					t.Errorf("driver_branch validation admits %s: %v; the pins file pins it: %v", b, got, want)
				}
			}
			for _, b := range branches {
				tp, err := renderTemplateWith(t, tpl, func(v map[string]cty.Value) { v["driver_branch"] = cty.StringVal(b) }, nil)
				if err != nil {
					t.Errorf("branch %s: %v", b, err)
					continue
				}
				cuda := entry(vars["cuda_versions"], b).AsString()
				if tp.cfg.Driver.Branch != b || tp.cfg.CUDA.Version != cuda {
					t.Errorf("branch %s renders driver branch %s with CUDA %s; want CUDA %s from the pins file", b, tp.cfg.Driver.Branch, tp.cfg.CUDA.Version, cuda)
				}
				if archive, ok := vars["archive_driver_versions"]; ok {
					// Canonical's driver and precompiled modules for the
					// branch, CUDA still from NVIDIA's repository.
					ta, err := renderTemplateWith(t, tpl, func(v map[string]cty.Value) {
						v["driver_branch"] = cty.StringVal(b)
						v["driver_source"] = cty.StringVal("ubuntu-archive")
					}, nil)
					want := entry(archive, b).AsString()
					switch {
					case err != nil:
						t.Errorf("branch %s from the archive: %v", b, err)
					case ta.cfg.Driver.Source != "ubuntu-archive" || ta.cfg.Driver.Version != want:
						t.Errorf("branch %s from the archive renders %s %s; want ubuntu-archive %s", b, ta.cfg.Driver.Source, ta.cfg.Driver.Version, want)
					case !strings.Contains(ta.plan, "'linux-modules-nvidia-"+b+"-server") || !strings.Contains(ta.plan, "cuda_set 'cuda-toolkit-"):
						t.Errorf("branch %s from the archive: the plan installs no precompiled modules or no CUDA set", b)
					}
				}
				dash := strings.ReplaceAll(cudaRelease(cuda), ".", "-")
				major, _, _ := strings.Cut(dash, "-")
				if set := "cuda_set 'cuda-toolkit-" + dash + "' '" + cuda + "' '" + dash + "' '" + major + "'"; !strings.Contains(tp.plan, "\n"+set+"\n") {
					t.Errorf("branch %s: the plan does not pin the CUDA release at %s whole (%s)", b, cuda, set)
				}
				bases, ok := vars["ngc_bases"]
				if !ok {
					continue
				}
				base := entry(bases, b)
				ref, digest := base.GetAttr("ref").AsString(), base.GetAttr("digest").AsString()
				m := ngcBaseTag.FindStringSubmatch(ref)
				switch {
				case m == nil:
					t.Errorf("branch %s: NGC base %s is not nvcr.io/nvidia/cuda:X.Y.Z-base-ubuntuNN.NN", b, ref)
				case m[1] != strings.TrimSuffix(cuda, "-1") || m[2] != tp.cfg.Distro.VersionID:
					t.Errorf("branch %s: NGC base %s is CUDA %s on Ubuntu %s; want the pinned CUDA %s on %s", b, ref, m[1], m[2], cuda, tp.cfg.Distro.VersionID)
				}
				if !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(digest) {
					t.Errorf("branch %s: NGC base digest %q is not sha256:<64 hex>", b, digest)
				}
			}

			// A pins file edited to pair the oldest branch with the newest
			// CUDA fails at decoding, naming the field and the matrix.
			oldest, newest := branches[0], branches[len(branches)-1]
			if oldest == newest {
				return
			}
			_, err := renderTemplateWith(t, tpl, func(v map[string]cty.Value) {
				m := v["cuda_versions"].AsValueMap()
				m[oldest] = m[newest]
				v["cuda_versions"] = cty.MapVal(m)
				v["driver_branch"] = cty.StringVal(oldest)
			}, nil)
			if err == nil || !strings.Contains(err.Error(), "cuda.version: CUDA "+cudaRelease(entry(vars["cuda_versions"], newest).AsString())+" needs a newer driver than branch "+oldest) {
				t.Errorf("branch %s with branch %s's CUDA: %v; want the provisioner to refuse it", oldest, newest, err)
			}
		})
	}
}

// cudaRelease is the MAJOR.MINOR of a cuda-toolkit package version.
func cudaRelease(v string) string {
	parts := strings.SplitN(v, ".", 3)
	return parts[0] + "." + parts[1]
}

// entry is a map's value at key, the map written in HCL as a map or an
// object (a var-file's literal is an object until Packer converts it).
func entry(v cty.Value, key string) cty.Value {
	if v.Type().IsObjectType() {
		return v.GetAttr(key)
	}
	return v.Index(cty.StringVal(key))
}

func mapKeys(t *testing.T, v cty.Value) []string {
	t.Helper()
	if !v.CanIterateElements() {
		t.Fatalf("%#v is not a map", v)
	}
	return slices.Sorted(maps.Keys(v.AsValueMap()))
}

// branchValidation evaluates the template's driver_branch validation
// condition as Packer would for a value of the variable.
func branchValidation(t *testing.T, file string) func(string) bool {
	t.Helper()
	vb := blocks(parseHCL(t, file), "variable", "driver_branch")
	if len(vb) != 1 {
		t.Fatalf("%s declares driver_branch %d times", file, len(vb))
	}
	val := blocks(vb[0].Body, "validation")
	if len(val) != 1 {
		t.Fatalf("%s: driver_branch has %d validation blocks, want 1", file, len(val))
	}
	cond := val[0].Body.Attributes["condition"].Expr
	return func(branch string) bool {
		ctx := &hcl.EvalContext{Variables: map[string]cty.Value{
			"var": cty.ObjectVal(map[string]cty.Value{"driver_branch": cty.StringVal(branch)}),
		}, Functions: packerFunctions}
		return value(t, file, cond, ctx).True()
	}
}
