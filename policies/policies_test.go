package policies

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/cover"
	"github.com/open-policy-agent/opa/v1/tester"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/gpuhost/gpuhost/policy/lint"
)

// minCoverage is the share of policy (non-test) lines the Rego tests must
// reach; below it the pack is not tested well enough to ship.
const minCoverage = 90.0

var (
	collectors = []string{
		"os", "kernel", "kernel_modules", "sysctl", "limits", "packages", "cgroup", "kubelet", "audit", "access", "tls", "tls_probe", "ssh",
		"encryption", "network", "firewall", "systemd", "container_runtime", "manifest",
		"gpu", "gpu_driver", "gpu_validation", "pci", "infiniband", "config_files", "containers", "sbom", "vulnerabilities", "secureboot", "files",
	}
	severities  = []string{"critical", "high", "medium", "low", "info"}
	targetKinds = []string{"rootfs", "image", "host", "facts", "oci"}
	idPattern   = regexp.MustCompile(`^GH-[A-Z]+-[0-9]{3}$`)
)

// loadModules parses every .rego file in FS as Rego v1 with annotations.
func loadModules(t *testing.T) map[string]*ast.Module {
	t.Helper()
	mods := map[string]*ast.Module{}
	err := fs.WalkDir(FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".rego") {
			return err
		}
		src, err := fs.ReadFile(FS, p)
		if err != nil {
			return err
		}
		m, err := ast.ParseModuleWithOpts(p, string(src), ast.ParserOptions{
			ProcessAnnotation: true,
			RegoVersion:       ast.RegoV1,
		})
		if err != nil {
			return fmt.Errorf("parsing %s: %w", p, err)
		}
		mods[p] = m
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(mods) == 0 {
		t.Fatal("no .rego files embedded")
	}
	return mods
}

func isTestFile(p string) bool { return strings.HasSuffix(p, "_test.rego") }

// TestRegoTests runs every Rego test in the pack with coverage, and holds the
// pack to passing tests, one test file per check, and minCoverage.
func TestRegoTests(t *testing.T) {
	mods := loadModules(t)
	cov := cover.New()
	ch, err := tester.NewRunner().
		SetModules(mods).
		SetCoverageQueryTracer(cov).
		RaiseBuiltinErrors(true).
		RunTests(context.Background(), nil)
	if err != nil {
		t.Fatalf("compiling the pack: %v", err)
	}
	testsPerPkg := map[string]int{}
	total := 0
	for r := range ch {
		total++
		switch {
		case r.Error != nil:
			t.Errorf("%s.%s (%s): error: %v", r.Package, r.Name, r.Location, r.Error)
		case r.Fail:
			t.Errorf("%s.%s (%s): FAIL at %v", r.Package, r.Name, r.Location, r.FailedAt)
		case r.Skip:
			t.Errorf("%s.%s (%s): skipped (todo_ tests are not allowed in the pack)", r.Package, r.Name, r.Location)
		}
		testsPerPkg[strings.TrimPrefix(r.Package, "data.")]++
	}
	t.Logf("%d Rego tests ran", total)

	for p, m := range mods {
		if isTestFile(p) {
			continue
		}
		pkg := strings.TrimPrefix(m.Package.Path.String(), "data.") + "_test"
		if testsPerPkg[pkg] < 2 {
			t.Errorf("%s: want at least a passing and a failing test in package %s, found %d tests", p, pkg, testsPerPkg[pkg])
		}
	}

	report := cov.Report(mods)
	covered, notCovered := 0, 0
	var names []string
	for f := range report.Files {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		if isTestFile(f) {
			continue
		}
		fr := report.Files[f]
		covered += fr.CoveredLines
		notCovered += fr.NotCoveredLines
		if fr.NotCoveredLines > 0 {
			var rows []string
			for _, r := range fr.NotCovered {
				rows = append(rows, fmt.Sprintf("%d-%d", r.Start.Row, r.End.Row))
			}
			t.Logf("%s: %.1f%% covered; not covered: %s", f, fr.Coverage, strings.Join(rows, ", "))
		}
	}
	for p := range mods {
		if !isTestFile(p) && report.Files[p] == nil {
			t.Errorf("%s: no coverage recorded at all", p)
		}
	}
	if covered+notCovered == 0 {
		t.Fatal("coverage report is empty")
	}
	pct := 100 * float64(covered) / float64(covered+notCovered)
	t.Logf("policy coverage: %.1f%% (%d of %d lines)", pct, covered, covered+notCovered)
	if pct < minCoverage {
		t.Errorf("policy coverage %.1f%% is below %.0f%%", pct, minCoverage)
	}
}

// checkMeta is the custom part of a check's package METADATA.
type checkMeta struct {
	ID          string              `json:"id"`
	Severity    string              `json:"severity"`
	Remediation string              `json:"remediation"`
	Controls    map[string][]string `json:"controls"`
	Targets     []string            `json:"targets"`
	Requires    []string            `json:"requires"`
	Judges      []string            `json:"judges"`
}

// isLibrary reports whether m is a helper package the checks import: no
// package METADATA and no deny rule, which is how the engine tells one.
// It still needs its own tests (TestRegoTests).
func isLibrary(m *ast.Module) bool {
	for _, a := range m.Annotations {
		if a.Scope == "package" {
			return false
		}
	}
	for _, r := range m.Rules {
		if r.Head.Name.String() == "deny" || r.Head.Ref()[0].Value.String() == "deny" {
			return false
		}
	}
	return true
}

// TestMetadata holds every check to the policy contract in DESIGN.md.
func TestMetadata(t *testing.T) {
	mods := loadModules(t)
	seen := map[string]string{}
	checks := 0
	for p, m := range mods {
		dir, file := path.Split(p)
		dir = strings.TrimSuffix(dir, "/")
		base := strings.TrimSuffix(file, ".rego")
		prefix, ok := lint.FolderPrefix[dir]
		// lib/ holds the libraries every domain shares, and no check.
		shared := dir == "lib" && (isTestFile(p) || isLibrary(m))
		if !ok && !shared {
			t.Errorf("%s: folder %q is not a known domain", p, dir)
			continue
		}
		wantPkg := "data.gpuhost." + dir + "." + base
		if got := m.Package.Path.String(); got != wantPkg {
			t.Errorf("%s: package %s, want %s", p, got, strings.TrimPrefix(wantPkg, "data."))
		}
		if isTestFile(p) || isLibrary(m) {
			continue
		}
		checks++
		var pkgAnn *ast.Annotations
		for _, a := range m.Annotations {
			if a.Scope == "package" {
				pkgAnn = a
			}
		}
		if pkgAnn == nil {
			t.Errorf("%s: no package-scoped METADATA", p)
			continue
		}
		if strings.TrimSpace(pkgAnn.Title) == "" || strings.TrimSpace(pkgAnn.Description) == "" {
			t.Errorf("%s: METADATA needs a title and a description", p)
		}
		raw, err := json.Marshal(pkgAnn.Custom)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		var meta checkMeta
		if err := json.Unmarshal(raw, &meta); err != nil {
			t.Errorf("%s: custom METADATA has the wrong shape: %v", p, err)
			continue
		}
		if !idPattern.MatchString(meta.ID) || !strings.HasPrefix(meta.ID, prefix) {
			t.Errorf("%s: id %q, want %sNNN", p, meta.ID, prefix)
		}
		if other, dup := seen[meta.ID]; dup {
			t.Errorf("%s: id %s already used by %s", p, meta.ID, other)
		}
		seen[meta.ID] = p
		if !slices.Contains(severities, meta.Severity) {
			t.Errorf("%s: severity %q is not one of %v", p, meta.Severity, severities)
		}
		if strings.TrimSpace(meta.Remediation) == "" {
			t.Errorf("%s: no remediation", p)
		}
		if len(meta.Controls["nist-800-53"]) == 0 {
			t.Errorf("%s: no nist-800-53 control", p)
		}
		for fw, ids := range meta.Controls {
			if len(ids) == 0 {
				t.Errorf("%s: control framework %s lists no ids", p, fw)
			}
		}
		if len(meta.Targets) == 0 || !slices.Contains(meta.Targets, "facts") {
			t.Errorf("%s: targets %v must be non-empty and include facts", p, meta.Targets)
		}
		for _, k := range meta.Targets {
			if !slices.Contains(targetKinds, k) {
				t.Errorf("%s: unknown target kind %q", p, k)
			}
		}
		if len(meta.Requires)+len(meta.Judges) == 0 {
			t.Errorf("%s: requires and judges list no collector", p)
		}
		for _, c := range slices.Concat(meta.Requires, meta.Judges) {
			if !slices.Contains(collectors, c) {
				t.Errorf("%s: requires unknown collector %q", p, c)
			}
		}
		if !hasRule(m, "deny") {
			t.Errorf("%s: no deny rule", p)
		}
	}
	if checks == 0 {
		t.Fatal("no checks found")
	}
	t.Logf("%d checks", checks)
}

func hasRule(m *ast.Module, name string) bool {
	for _, r := range m.Rules {
		if r.Head.Name.String() == name || r.Head.Ref().String() == name {
			return true
		}
	}
	return false
}

// TestDefaultParams validates params.default.yaml against params.schema.json
// and checks that every schema default equals the shipped value, so the two
// files cannot drift apart.
func TestDefaultParams(t *testing.T) {
	raw, err := DefaultParams()
	if err != nil {
		t.Fatal(err)
	}
	var params map[string]any
	if err := yaml.UnmarshalWithOptions(raw, &params, yaml.UseJSONUnmarshaler()); err != nil {
		t.Fatalf("parsing %s: %v", DefaultParamsFile, err)
	}
	// Round-trip through JSON so numbers and maps have the JSON shapes the
	// validator and the schema defaults use.
	params = jsonRoundTrip(t, params).(map[string]any)

	schemaBytes, err := ParamsSchema()
	if err != nil {
		t.Fatal(err)
	}
	schemaDoc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(schemaBytes)))
	if err != nil {
		t.Fatalf("parsing %s: %v", ParamsSchemaFile, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(ParamsSchemaFile, schemaDoc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(ParamsSchemaFile)
	if err != nil {
		t.Fatalf("compiling %s: %v", ParamsSchemaFile, err)
	}
	if err := sch.Validate(params); err != nil {
		t.Fatalf("%s does not satisfy %s: %v", DefaultParamsFile, ParamsSchemaFile, err)
	}
	if err := sch.Validate(map[string]any{"allowed_ports": []any{"22"}}); err == nil {
		t.Error("schema accepted a string port")
	}

	var schema struct {
		Properties map[string]struct {
			Default any `json:"default"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(schemaBytes, &schema); err != nil {
		t.Fatal(err)
	}
	for k, v := range params {
		prop, ok := schema.Properties[k]
		if !ok {
			t.Errorf("%s: key %s is not described in %s", DefaultParamsFile, k, ParamsSchemaFile)
			continue
		}
		if !reflect.DeepEqual(prop.Default, v) {
			t.Errorf("%s: default %v, but %s ships %v", k, prop.Default, DefaultParamsFile, v)
		}
	}
	for k := range schema.Properties {
		if _, ok := params[k]; !ok {
			t.Errorf("%s describes %s, but %s does not set it", ParamsSchemaFile, k, DefaultParamsFile)
		}
	}
}

func jsonRoundTrip(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}
