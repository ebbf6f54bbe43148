package lint

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gpuhost/gpuhost/policies"
)

func TestDefaultPackClean(t *testing.T) {
	schema, err := policies.ParamsSchema()
	if err != nil {
		t.Fatal(err)
	}
	findings, err := Pack(t.Context(), policies.FS, "embedded", schema)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		t.Errorf("default pack: %s", f)
	}
}

const goodMeta = `# METADATA
# title: t
# description: d
# scope: package
# custom:
#   id: %ID%
#   severity: medium
#   remediation: r
#   location: /etc/x.conf
#   controls: {nist-800-53: [CM-6]}
#   targets: [rootfs]
#   requires: []
package gpuhost.%PKG%

deny contains "x" if input.x
`

func module(id, pkg string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte(strings.NewReplacer("%ID%", id, "%PKG%", pkg).Replace(goodMeta))}
}

func TestRules(t *testing.T) {
	fsys := fstest.MapFS{
		"gpu/a.rego":      module("GH-GPU-001", "gpu.a"),
		"gpu/a_test.rego": {Data: []byte("package gpuhost.gpu.a_test\n\ntest_x if data.gpuhost.gpu.a.deny\n")},
		"gpu/b.rego":      module("GH-GPU-001", "gpu.b"),
		"cgroup/c.rego":   module("GH-CG-001", "cgroup.c"),
		"custom/d.rego":   module("ACME-1", "custom.d"),
		"lib/util.rego":   {Data: []byte("package gpuhost.lib.util\n\nports := data.gpuhost.params.lib_ports\n")},
		"gpu/e.rego":      {Data: []byte(strings.Replace(string(module("GH-GPU-002", "gpu.e").Data), "input.x", "data.gpuhost.lib.util.ports", 1))},
		"gpu/sev.rego":    {Data: []byte(strings.Replace(string(module("GH-GPU-003", "gpu.sev").Data), "medium", "urgent", 1))},
	}
	findings, err := Pack(t.Context(), fsys, "mem", []byte(`{"properties":{}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range findings {
		got[f.File+" "+f.Rule] = f.Message
	}
	want := []string{
		"gpu/b.rego " + RuleDuplicateID,
		"cgroup/c.rego " + RuleIDPrefix,
		"gpu/e.rego " + RuleUndeclaredParam, // read through a library
		"gpu/sev.rego " + RuleMetadata,
	}
	for _, k := range want {
		if _, ok := got[k]; !ok {
			t.Errorf("no finding %s in %v", k, findings)
		}
	}
	if len(findings) != len(want) {
		t.Errorf("%d findings, want %d: %v", len(findings), len(want), findings)
	}
	if !strings.Contains(got["gpu/e.rego "+RuleUndeclaredParam], "lib_ports") {
		t.Errorf("undeclared param message: %q", got["gpu/e.rego "+RuleUndeclaredParam])
	}

	// Without a schema the params rule is off.
	findings, err = Pack(t.Context(), fsys, "mem", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		if f.Rule == RuleUndeclaredParam {
			t.Errorf("no schema, yet %s", f)
		}
	}

	if _, err := Pack(t.Context(), fstest.MapFS{}, "empty", nil); err == nil {
		t.Error("an empty pack linted")
	}
}

func TestFindingString(t *testing.T) {
	f := Finding{File: "a.rego", Line: 3, Rule: RuleRegoV0, Message: "m"}
	if s := f.String(); s != "a.rego:3: rego-v0: m" {
		t.Errorf("String() = %q", s)
	}
	f.Line = 0
	if s := f.String(); s != "a.rego: rego-v0: m" {
		t.Errorf("String() = %q", s)
	}
}

// TestLocationAndDescriptionForCodeScanning: a check without a location, or
// with one that is no clean absolute file path, or whose description is
// longer than GitHub code scanning takes, is a finding.
func TestLocationAndDescriptionForCodeScanning(t *testing.T) {
	meta := func(id, pkg, from, to string) *fstest.MapFile {
		return &fstest.MapFile{Data: []byte(strings.Replace(string(module(id, pkg).Data), from, to, 1))}
	}
	fsys := fstest.MapFS{
		"gpu/ok.rego":       module("GH-GPU-001", "gpu.ok"),
		"gpu/none.rego":     meta("GH-GPU-002", "gpu.none", "#   location: /etc/x.conf\n", ""),
		"gpu/relative.rego": meta("GH-GPU-003", "gpu.relative", "/etc/x.conf", "etc/x.conf"),
		"gpu/dir.rego":      meta("GH-GPU-004", "gpu.dir", "/etc/x.conf", "/etc/../x/"),
		"gpu/long.rego":     meta("GH-GPU-005", "gpu.long", "# description: d", "# description: "+strings.Repeat("d", MaxDescription+1)),
	}
	findings, err := Pack(t.Context(), fsys, "mem", nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, f := range findings {
		got[f.File] = f.Message
	}
	for file, want := range map[string]string{
		"gpu/none.rego":     "custom.location is missing",
		"gpu/relative.rego": `custom.location "etc/x.conf" is not a clean absolute path`,
		"gpu/dir.rego":      `custom.location "/etc/../x/" is not a clean absolute path`,
		"gpu/long.rego":     "description is 1025 characters, more than 1024",
	} {
		if !strings.Contains(got[file], want) {
			t.Errorf("%s: finding %q, want %q", file, got[file], want)
		}
	}
	if msg, bad := got["gpu/ok.rego"]; bad {
		t.Errorf("gpu/ok.rego: %s", msg)
	}
}
