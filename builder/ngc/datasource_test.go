package ngc

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/zclconf/go-cty/cty"

	"github.com/gpuhost/gpuhost/builder/internal/sdctest"
	"github.com/gpuhost/gpuhost/containers/seed"
	"github.com/gpuhost/gpuhost/containers/seed/seedtest"
)

func TestExecuteResolvesATagWithNGCCredentials(t *testing.T) {
	reg := seedtest.New(t)
	img := reg.Push(t, "nvidia/pytorch", "24.08-py3", 512, 2)
	reg.Requests()
	t.Setenv(seed.APIKeyEnv, "nvapi-test-key")

	var d Datasource
	if err := d.Configure(map[string]interface{}{"ref": "nvcr.io/nvidia/pytorch:24.08-py3", "registry": reg.Host}); err != nil {
		t.Fatal(err)
	}
	v, err := d.Execute()
	if err != nil {
		t.Fatal(err)
	}
	dg := seedtest.Digest(t, img)
	want := map[string]string{
		"ref":        "nvcr.io/nvidia/pytorch:24.08-py3",
		"digest":     dg,
		"pinned_ref": "nvcr.io/nvidia/pytorch@" + dg,
		"media_type": seed.MediaDockerImageV2, // what random.Image writes
	}
	for k, w := range want {
		if got := v.GetAttr(k); got.Type() != cty.String || got.AsString() != w {
			t.Errorf("%s = %#v, want %q", k, got, w)
		}
	}
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("$oauthtoken:nvapi-test-key"))
	n := 0
	for _, q := range reg.Requests() {
		if strings.Contains(q.Path, "/manifests/") {
			n++
			if q.Authorization != basic {
				t.Errorf("%s %s sent Authorization %q", q.Method, q.Path, q.Authorization)
			}
		}
	}
	if n == 0 {
		t.Error("the registry saw no manifest request")
	}
}

func TestExecuteErrors(t *testing.T) {
	reg := seedtest.New(t)
	for _, tc := range []struct {
		raw  map[string]interface{}
		want string
	}{
		{map[string]interface{}{"ref": "docker.io/library/ubuntu:22.04", "registry": reg.Host}, "registry docker.io is not allowed"},
		{map[string]interface{}{"ref": "nvcr.io/nvidia/missing:1", "registry": reg.Host}, "nvcr.io/nvidia/missing:1"},
		{map[string]interface{}{"ref": "127.0.0.1/nvidia/x:1", "registry": reg.Host, "allowed_registries": []interface{}{"nvcr.io"}}, "not allowed"},
	} {
		var d Datasource
		if err := d.Configure(tc.raw); err != nil {
			t.Fatal(err)
		}
		if _, err := d.Execute(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want %q", tc.raw, err, tc.want)
		}
	}
}

func TestConfigureErrors(t *testing.T) {
	var d Datasource
	err := d.Configure(map[string]interface{}{"timeout": "soon", "registry": "a/b", "pinned": "sha256:ABC", "on_moved": "ignore"})
	for _, want := range []string{"ref: required", "timeout:", "registry:", `pinned: "sha256:ABC" is not a digest`, `on_moved: "ignore" is not fail or warn`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
}

func TestOutputSpecMatchesExecute(t *testing.T) {
	var d Datasource
	spec := d.OutputSpec()
	for _, k := range []string{"ref", "digest", "pinned_ref", "media_type", "current", "moved"} {
		if _, ok := spec[k]; !ok {
			t.Errorf("output spec lacks %s", k)
		}
	}
}

// TestGeneratedFilesAreCurrent regenerates the HCL2 spec and the docs and
// compares them with the committed ones.
func TestGeneratedFilesAreCurrent(t *testing.T) {
	sdc := sdctest.Find(t)
	const fix = "go generate ./builder/ngc/"
	sdctest.Same(t, sdctest.Spec(t, sdc, "datasource.go", "ngc", "Config,DatasourceOutput"), "datasource.hcl2spec.go", fix)
	sdctest.Same(t, sdctest.Docs(t, "datasource-ngc.mdx", "sh", "gendocs.sh", sdc), "../../docs/datasource-ngc.mdx", fix)
}

// TestPinnedTagThatMoved: with the reviewed pin, a tag that still names it
// passes; once the tag moves to another image, the build fails naming both
// digests, or with on_moved = "warn" bakes the pin and says it moved.
func TestPinnedTagThatMoved(t *testing.T) {
	reg := seedtest.New(t)
	reviewed := seedtest.Digest(t, reg.Push(t, "nvidia/cuda", "12.2.2-base", 256, 1))
	execute := func(raw map[string]interface{}) (cty.Value, error) {
		t.Helper()
		var d Datasource
		if err := d.Configure(raw); err != nil {
			t.Fatal(err)
		}
		return d.Execute()
	}
	cfg := func(extra ...string) map[string]interface{} {
		raw := map[string]interface{}{"ref": "nvcr.io/nvidia/cuda:12.2.2-base", "registry": reg.Host, "pinned": reviewed}
		for i := 0; i+1 < len(extra); i += 2 {
			raw[extra[i]] = extra[i+1]
		}
		return raw
	}
	v, err := execute(cfg())
	if err != nil || v.GetAttr("digest").AsString() != reviewed || v.GetAttr("moved").True() {
		t.Fatalf("a tag at its pin: %v %#v", err, v)
	}

	moved := seedtest.Digest(t, reg.Push(t, "nvidia/cuda", "12.2.2-base", 256, 1))
	_, err = execute(cfg())
	if err == nil || !strings.Contains(err.Error(), "has moved: it resolves to "+moved+", and the reviewed pin is "+reviewed) {
		t.Errorf("a moved tag, on_moved unset: err = %v", err)
	}
	v, err = execute(cfg("on_moved", "warn"))
	if err != nil {
		t.Fatal(err)
	}
	if v.GetAttr("digest").AsString() != reviewed || v.GetAttr("pinned_ref").AsString() != "nvcr.io/nvidia/cuda@"+reviewed ||
		v.GetAttr("current").AsString() != moved || !v.GetAttr("moved").True() {
		t.Errorf("a moved tag with on_moved = warn: %#v", v)
	}
}
