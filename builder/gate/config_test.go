package gate

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/builder/internal/evaluation"
	"github.com/gpuhost/gpuhost/builder/internal/sdctest"
	"github.com/gpuhost/gpuhost/render/report"
)

func TestDecodeListsEveryProblem(t *testing.T) {
	_, err := Decode(map[string]interface{}{
		"fail_on":          "severe",
		"fail_on_skip":     "all",
		"trivy_db":         "config_test.go",
		"reports":          []string{"json", "pdf", "json"},
		"policy":           []string{""},
		"verification_key": "",
		"publish": map[string]interface{}{
			"repository":   "Registry.example.com/UPPER",
			"tag":          "-bad",
			"username_env": "REGISTRY USER",
			"signing":      map[string]interface{}{"key_file": "nope.pem", "kms_key": "alias/x", "password_env": "A-B"},
		},
	})
	if err == nil {
		t.Fatal("accepted")
	}
	msg := err.Error()
	for _, want := range []string{
		`fail_on: "severe" is not one of critical, high, medium, low, info`,
		`fail_on_skip: "all" is not one of critical, high, medium, low, info`,
		`trivy_db: config_test.go is a regular file, not a directory`,
		`reports[1]: "pdf" is not one of`,
		`reports[2]: "json" is listed twice`,
		`policy[0]: empty path`,
		`publish.repository: "Registry.example.com/UPPER" is not registry/repository`,
		`publish.tag: "-bad" is not an OCI tag`,
		`publish.username_env and publish.password_env: set both or neither`,
		`publish.username_env: "REGISTRY USER" is not an environment variable name`,
		`publish.signing: set only one of key_file, key_env and kms_key`,
		`publish.signing.key_file: open nope.pem: no such file or directory`,
		`publish.signing.password_env: "A-B" is not an environment variable name`,
		`publish.signing.kms_key: "alias/x" is not a KMS URI (scheme://key)`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("missing %q in:\n%s", want, msg)
		}
	}
	// One problem a line, each starting with its field in lower case.
	if bad := regexp.MustCompile(`(?m)^\s+[^a-z\s]`).FindAllString(msg, -1); len(bad) > 0 || strings.Count(msg, "\n") < 8 {
		t.Errorf("lines not starting with a lower-case field %q in:\n%s", bad, msg)
	}
}

func TestDecodeRejects(t *testing.T) {
	for _, tc := range []struct {
		raw  map[string]interface{}
		want string
	}{
		{map[string]interface{}{"publsh": map[string]interface{}{}}, "publsh"},
		{map[string]interface{}{"publish": map[string]interface{}{"repository": "r.example.com/a/b:v1"}}, "must not carry a tag or digest"},
		{map[string]interface{}{"publish": map[string]interface{}{"repository": "r.example.com/a@sha256:00"}}, "must not carry a tag or digest"},
		{map[string]interface{}{"verification_key": "k.pem"}, "verification_key: set, but no policy"},
		{map[string]interface{}{"vulnerabilities": map[string]interface{}{"fail_on": "high"}}, "vulnerabilities: set, but no trivy_db"},
		{map[string]interface{}{"trivy_db": ".", "vulnerabilities": map[string]interface{}{"fail_on": "info"}}, `vulnerabilities.fail_on: "info" is not one of`},
		{map[string]interface{}{"trivy_db": ".", "vulnerabilities": map[string]interface{}{"grace_days": -1}}, "vulnerabilities.grace_days: -1 is negative"},
		{map[string]interface{}{"trivy_db": ".", "vulnerabilities": map[string]interface{}{"max_db_age_days": -1}}, "vulnerabilities.max_db_age_days: -1 is negative"},
		// A published image is always signed.
		{map[string]interface{}{"publish": map[string]interface{}{"repository": "r.example.com/a/b"}}, "publish.signing: set key_file, key_env or kms_key"},
		{map[string]interface{}{"publish": map[string]interface{}{"repository": "r.example.com/a/b", "template_file": "nope.pkr.hcl",
			"signing": map[string]interface{}{"key_env": "K"}}}, "publish.template_file: open nope.pkr.hcl"},
	} {
		if _, err := Decode(tc.raw); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.raw, err, tc.want)
		}
	}
	for _, ok := range []map[string]interface{}{
		{"repository": "localhost:5000/gpu/img", "signing": map[string]interface{}{"key_env": "GPUHOST_SIGNING_KEY"}},
		{"repository": "localhost:5000/gpu/img", "signing": map[string]interface{}{"kms_key": "hashivault://gpuhost"}, "template_file": "config_test.go"},
		// A template leaves the repository empty where nothing is pushed.
		{"repository": "", "username_env": "REGISTRY_USER", "password_env": "REGISTRY_TOKEN", "tag": "v1"},
	} {
		if _, err := Decode(map[string]interface{}{"publish": ok}); err != nil {
			t.Errorf("%v refused: %v", ok, err)
		}
	}
}

func TestDecodeDefaults(t *testing.T) {
	c, err := Decode(map[string]interface{}{})
	if err != nil {
		t.Fatal(err)
	}
	if c.FailOn != "high" || c.VerificationAlg != "" || !slices.Equal(c.Reports, evaluation.DefaultReports("")) || len(c.Reports) != 8 {
		t.Errorf("defaults: %+v", c)
	}
	for _, f := range report.Formats() {
		if got := evaluation.ReportPath("disk.raw", "gate", f); !strings.HasPrefix(got, "disk.raw.gate.") || strings.HasSuffix(got, ".") {
			t.Errorf("format %s has no file extension: %s", f, got)
		}
	}
}

func TestConfigSpecCoversEveryField(t *testing.T) {
	var p PostProcessor
	spec := p.ConfigSpec()
	for _, key := range []string{"policy", "extend_policy", "verification_key", "verification_alg", "params", "waivers", "fail_on", "fail_on_skip", "trivy_db", "reports", "publish"} {
		if _, ok := spec[key]; !ok {
			t.Errorf("HCL2 spec lacks %s", key)
		}
	}
}

var ociTag = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

func TestDefaultTag(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("x", 3600))
	for disk, want := range map[string]string{
		"/out/debian-12-gpu.qcow2":                  "debian-12-gpu-20260304T040607Z",
		"/out/my image+v1.raw":                      "my_image_v1-20260304T040607Z",
		"/out/.qcow2":                               "image-20260304T040607Z",
		"/out/" + strings.Repeat("a", 300) + ".img": strings.Repeat("a", 127-17) + "-20260304T040607Z",
	} {
		got := defaultTag(disk, at)
		if got != want || !ociTag.MatchString(got) {
			t.Errorf("defaultTag(%q) = %q, want %q", disk, got, want)
		}
	}
}

func FuzzDefaultTag(f *testing.F) {
	for _, s := range []string{"debian-12-gpu.qcow2", "..-x.raw", "é.img", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		tag := defaultTag("/out/"+name, time.Unix(0, 0))
		if !ociTag.MatchString(tag) {
			t.Errorf("defaultTag(%q) = %q is not an OCI tag", name, tag)
		}
	})
}

// TestGeneratedFilesAreCurrent regenerates config.hcl2spec.go and
// docs/post-processor-gate.mdx and compares them with the committed ones.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	sdc := sdctest.Find(t)
	const fix = "go generate ./builder/gate"
	sdctest.Same(t, sdctest.Spec(t, sdc, "config.go", "gate", "Config,Publish,Signing"), "config.hcl2spec.go", fix)
	docs := sdctest.Docs(t, "post-processor-gate.mdx", "sh", "gendocs.sh", sdc)
	sdctest.Same(t, docs, "../../docs/post-processor-gate.mdx", fix)
}
