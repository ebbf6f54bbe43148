package policies

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/format"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/storage/inmem"

	"github.com/gpuhost/gpuhost/facts"
)

var fixFormat = flag.Bool("fmt", false, "rewrite .rego files that are not opa-fmt formatted")

// TestFormatted keeps the pack in `opa fmt` style, so that reviews of policy
// changes show only real changes. Run with -fmt to rewrite the files.
func TestFormatted(t *testing.T) {
	for p := range loadModules(t) {
		src, err := fs.ReadFile(FS, p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := format.SourceWithOpts(p, src, format.Opts{RegoVersion: ast.RegoV1})
		if err != nil {
			t.Errorf("formatting %s: %v", p, err)
			continue
		}
		if bytes.Equal(got, src) {
			continue
		}
		if *fixFormat {
			if err := os.WriteFile(filepath.FromSlash(p), got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		t.Errorf("%s is not opa-fmt formatted (go test ./policies -run TestFormatted -fmt fixes it)", p)
	}
}

// evalPack evaluates every check in the pack against doc, the way the engine
// does: the shipped default params with overrides replacing them key by key.
// It returns deny and skip per package path (without the data. prefix).
func evalPack(t *testing.T, doc, overrides map[string]any) (deny, skip map[string][]string) {
	t.Helper()
	raw, err := DefaultParams()
	if err != nil {
		t.Fatal(err)
	}
	var params map[string]any
	if err := yaml.Unmarshal(raw, &params); err != nil {
		t.Fatalf("parsing %s: %v", DefaultParamsFile, err)
	}
	maps.Copy(params, overrides)
	store := inmem.NewFromObject(map[string]any{"gpuhost": map[string]any{"params": jsonRoundTrip(t, params)}})

	opts := []func(*rego.Rego){
		rego.Store(store),
		rego.Input(doc),
		rego.StrictBuiltinErrors(true),
		rego.Query("pack = data.gpuhost"),
	}
	var pkgs [][]string
	for p, m := range loadModules(t) {
		if isTestFile(p) {
			continue
		}
		opts = append(opts, rego.ParsedModule(m))
		var path []string
		for _, term := range m.Package.Path[1:] {
			path = append(path, strings.Trim(term.String(), `"`))
		}
		pkgs = append(pkgs, path)
	}
	rs, err := rego.New(opts...).Eval(context.Background())
	if err != nil {
		t.Fatalf("evaluating the pack: %v", err)
	}
	if len(rs) != 1 {
		t.Fatalf("evaluating the pack: %d results", len(rs))
	}
	pack := map[string]any{"gpuhost": rs[0].Bindings["pack"]}
	deny, skip = map[string][]string{}, map[string][]string{}
	for _, path := range pkgs {
		var node any = pack
		for _, k := range path {
			node = node.(map[string]any)[k]
		}
		name := strings.Join(path, ".")
		for rule, into := range map[string]map[string][]string{"deny": deny, "skip": skip} {
			into[name] = []string{}
			vals, _ := node.(map[string]any)[rule].([]any)
			for _, v := range vals {
				// A finding given as an object reads as its message.
				if f, ok := v.(map[string]any); ok {
					v = f["msg"]
				}
				into[name] = append(into[name], v.(string))
			}
		}
	}
	return deny, skip
}

func readFacts(t *testing.T, name string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "scan", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := facts.ValidateJSON(raw); err != nil {
		t.Fatalf("%s is not a valid facts document: %v", name, err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("parsing %s: %v", name, err)
	}
	return doc
}

// libraryPackages are the pack's helper packages, which decide nothing.
func libraryPackages(t *testing.T) map[string]bool {
	t.Helper()
	libs := map[string]bool{}
	for p, m := range loadModules(t) {
		if !isTestFile(p) && isLibrary(m) {
			libs[strings.TrimPrefix(m.Package.Path.String(), "data.")] = true
		}
	}
	return libs
}

// TestCompliantHost: a well-built GPU host passes every check with the
// default params plus pins, and skips only what it does not run (nginx, docker).
func TestCompliantHost(t *testing.T) {
	pins := map[string]any{"pins": map[string]any{
		"nvidia-container-toolkit": "1.17.8-1",
		"libnvidia-container1":     "1.17.8-1",
	},
		"gpu_driver_version":  "535.261.03",
		"gpu_expected_count":  1,
		"gpu_mig":             false,
		"gpu_require_cc":      true,
		"slice_memory_limits": []any{"user.slice"},
		"audit_remote":        "logs.example",
	}
	deny, skip := evalPack(t, readFacts(t, "compliant-host.json"), pins)
	wantSkip := map[string]bool{
		"gpuhost.tls.nginx_protocols":           true,
		"gpuhost.runtime.docker_systemd_cgroup": true,
		// The default params make TLS 1.2 weak, so GH-TLS-003 covers it.
		"gpuhost.tls.probe_cipher_suites": true,
	}
	libs := libraryPackages(t)
	for pkg, msgs := range deny {
		if libs[pkg] {
			continue
		}
		if len(msgs) > 0 {
			t.Errorf("%s denies a compliant host: %q", pkg, msgs)
		}
		if got := len(skip[pkg]) > 0; got != wantSkip[pkg] {
			t.Errorf("%s: skipped=%v (%q), want %v", pkg, got, skip[pkg], wantSkip[pkg])
		}
	}
}

// TestNoncompliantImage: an image that gets everything wrong fails every
// check that applies to an image, with the default params plus pins.
func TestNoncompliantImage(t *testing.T) {
	pins := map[string]any{"pins": map[string]any{
		"nvidia-container-toolkit": "1.18.0-1",
		"nvidia-driver":            "535.261.03-1",
		"libnvidia-ml1":            "535.261.03-1",
	}, "slice_memory_limits": []any{"user.slice"}, "audit_remote": "logs.example"}
	deny, skip := evalPack(t, readFacts(t, "noncompliant-image.json"), pins)
	offline := map[string]bool{"gpuhost.net.allowed_ports": true, "gpuhost.tls.probe_tls12": true}
	// Checks whose METADATA targets leave out images (the live NVML checks)
	// are never evaluated on an image by the engine; they need no image facts.
	// Libraries are no checks at all.
	liveOnly := map[string]bool{}
	for p, m := range loadModules(t) {
		if isTestFile(p) {
			continue
		}
		if isLibrary(m) {
			liveOnly[strings.TrimPrefix(m.Package.Path.String(), "data.")] = true
			continue
		}
		for _, a := range m.Annotations {
			if a.Scope != "package" {
				continue
			}
			targets, _ := a.Custom["targets"].([]any)
			if !slices.Contains(targets, any("image")) {
				liveOnly[strings.TrimPrefix(m.Package.Path.String(), "data.")] = true
			}
		}
	}
	libs := libraryPackages(t)
	// This image carries its whole NVIDIA stack, at the wrong versions;
	// TestEmptyGPUImage is the image without one.
	hasStack := map[string]bool{"gpuhost.pin.nvidia_stack": true}
	for pkg, msgs := range deny {
		if liveOnly[pkg] || libs[pkg] || hasStack[pkg] {
			continue
		}
		if offline[pkg] {
			if len(skip[pkg]) == 0 {
				t.Errorf("%s does not skip on an image", pkg)
			}
			continue
		}
		if len(skip[pkg]) > 0 {
			t.Errorf("%s skipped: %q", pkg, skip[pkg])
		}
		if len(msgs) == 0 {
			t.Errorf("%s passes a non-compliant image", pkg)
		}
		t.Logf("%s: %q", pkg, msgs)
	}
}

// TestEmptyGPUImage: with the default params (the gpu profile, nothing
// pinned), an image with no NVIDIA driver, no CUDA and no container toolkit
// fails the pin checks instead of passing on having nothing to check; the
// cpu profile is the explicit way out.
func TestEmptyGPUImage(t *testing.T) {
	doc := map[string]any{
		"schema":     "gpuhost.facts/v1",
		"target":     map[string]any{"kind": "image", "ref": "empty.qcow2", "scanned_at": "2026-12-01T00:00:00Z"},
		"collectors": map[string]any{"packages": map[string]any{"status": "ok"}, "gpu_driver": map[string]any{"status": "ok"}},
		"packages":   []any{map[string]any{"name": "bash", "version": "5.2.15-2+b7", "arch": "amd64", "held": false}},
		"gpu_driver": map[string]any{"packages": []any{}, "modules": map[string]any{}, "nouveau_blacklisted": false, "persistenced_enabled": false, "fabricmanager_enabled": false},
	}
	deny, _ := evalPack(t, doc, nil)
	if got := deny["gpuhost.pin.nvidia_stack"]; len(got) != 3 {
		t.Errorf("GH-PIN-005 on an empty image: %q, want the driver, CUDA and the toolkit named", got)
	}
	if got := deny["gpuhost.pin.versions"]; len(got) != 1 || !strings.Contains(got[0], "params.pins is empty") {
		t.Errorf("GH-PIN-001 on an empty image: %q", got)
	}
	deny, skip := evalPack(t, doc, map[string]any{"profile": "cpu"})
	for _, pkg := range []string{"gpuhost.pin.nvidia_stack", "gpuhost.pin.versions"} {
		if len(deny[pkg]) > 0 || len(skip[pkg]) == 0 {
			t.Errorf("%s under the cpu profile: deny %q, skip %q", pkg, deny[pkg], skip[pkg])
		}
	}
}
