package bundle

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/internal/testutil/testsign"
	"github.com/gpuhost/gpuhost/policies"
	"github.com/gpuhost/gpuhost/policy/compliance"
)

func writeBundle(t *testing.T, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pack.tar.gz")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSignedBundleVerifies(t *testing.T) {
	priv, pub := testsign.RSAKeyPEM(t)
	data, err := Build(policies.FS, "embedded", Options{SigningKey: priv})
	if err != nil {
		t.Fatal(err)
	}

	// OPA's own reader, verifying as an OPA server configured with the key would.
	vc := bundle.NewVerificationConfig(map[string]*bundle.KeyConfig{KeyID: {Key: pub, Algorithm: "RS256"}}, KeyID, "", nil)
	b, err := bundle.NewReader(bytes.NewReader(data)).WithBundleVerificationConfig(vc).WithRegoVersion(ast.RegoV1).Read()
	if err != nil {
		t.Fatalf("OPA refuses the bundle: %v", err)
	}
	if len(b.Signatures.Signatures) != 1 {
		t.Errorf("signatures: %d, want 1", len(b.Signatures.Signatures))
	}
	if b.Manifest.Roots == nil || len(*b.Manifest.Roots) != 1 || (*b.Manifest.Roots)[0] != Root {
		t.Errorf("manifest roots: %v, want [%s]", b.Manifest.Roots, Root)
	}
	if b.Manifest.Revision == "" {
		t.Error("manifest has no revision")
	}
	for _, m := range b.Modules {
		if strings.HasSuffix(m.Path, "_test.rego") {
			t.Errorf("test module %s is in the bundle", m.Path)
		}
	}

	// The engine's loader, as scan --verification-key uses it.
	src, err := engine.LoadPath(writeBundle(t, data), &engine.BundleKey{PEM: pub})
	if err != nil {
		t.Fatalf("engine refuses the bundle: %v", err)
	}
	want, err := engine.LoadFS(policies.FS, "embedded")
	if err != nil {
		t.Fatal(err)
	}
	nonTest := 0
	for p, raw := range want.Modules {
		if strings.HasSuffix(p, "_test.rego") {
			continue
		}
		nonTest++
		if !bytes.Equal(src.Modules[p], raw) {
			t.Errorf("%s differs after the round trip", p)
		}
	}
	if len(src.Modules) != nonTest {
		t.Errorf("bundle has %d modules, the pack %d", len(src.Modules), nonTest)
	}
	ports, ok := src.Params["allowed_ports"].([]any)
	if !ok || len(ports) != 1 {
		t.Errorf("params did not round-trip: allowed_ports = %#v", src.Params["allowed_ports"])
	}
	// The compliance profiles travel signed with the checks, and read
	// back as the same profiles.
	if len(src.Profiles) != len(want.Profiles) || len(want.Profiles) == 0 {
		t.Errorf("bundle has %d compliance profiles, the pack %d", len(src.Profiles), len(want.Profiles))
	}
	for name, raw := range want.Profiles {
		a, errA := compliance.Parse(name, raw)
		b, errB := compliance.Parse(name, src.Profiles[name])
		if errA != nil || errB != nil || !reflect.DeepEqual(a, b) {
			t.Errorf("compliance profile %s differs after the round trip (%v, %v)", name, errA, errB)
		}
	}
	// The bundle compiles into an engine with the same checks.
	ctx := t.Context()
	eb, err := engine.New(ctx, engine.WithSource(src))
	if err != nil {
		t.Fatal(err)
	}
	ee, err := engine.New(ctx, engine.WithSource(want))
	if err != nil {
		t.Fatal(err)
	}
	if len(eb.Checks()) != len(ee.Checks()) || len(eb.Checks()) == 0 {
		t.Errorf("bundle has %d checks, the pack %d", len(eb.Checks()), len(ee.Checks()))
	}

	// Same pack, same bytes of content: the revision is stable.
	again, err := Build(policies.FS, "embedded", Options{SigningKey: priv})
	if err != nil {
		t.Fatal(err)
	}
	b2, err := bundle.NewReader(bytes.NewReader(again)).WithSkipBundleVerification(true).Read()
	if err != nil {
		t.Fatal(err)
	}
	if b2.Manifest.Revision != b.Manifest.Revision {
		t.Errorf("revision changed between two builds: %s, %s", b.Manifest.Revision, b2.Manifest.Revision)
	}
}

func TestRefused(t *testing.T) {
	priv, pub := testsign.RSAKeyPEM(t)
	_, otherPub := testsign.RSAKeyPEM(t)
	data, err := Build(policies.FS, "embedded", Options{SigningKey: priv})
	if err != nil {
		t.Fatal(err)
	}
	tampered := false
	cases := map[string]struct {
		data []byte
		key  string
		want string
	}{
		"wrong key": {data, otherPub, "verification"},
		"no signatures": {testsign.RewriteTarGz(t, data, func(name string, body []byte) []byte {
			if strings.HasSuffix(name, ".signatures.json") {
				return nil
			}
			return body
		}), pub, "signature"},
		"one byte changed": {testsign.RewriteTarGz(t, data, func(name string, body []byte) []byte {
			if !tampered && strings.HasSuffix(name, ".rego") {
				tampered = true
				body = bytes.Clone(body)
				body[len(body)-1] ^= ' '
			}
			return body
		}), pub, ".rego"},
		"data changed": {testsign.RewriteTarGz(t, data, func(name string, body []byte) []byte {
			if strings.HasSuffix(name, "data.json") {
				return bytes.Replace(body, []byte("22"), []byte("23"), 1)
			}
			return body
		}), pub, "data.json"},
		"unsigned": {mustBuild(t, Options{}), pub, "signature"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := engine.LoadPath(writeBundle(t, c.data), &engine.BundleKey{PEM: c.key})
			if err == nil {
				t.Fatal("loaded, want refused")
			}
			t.Log(err)
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not mention %q", err, c.want)
			}
		})
	}
}

func mustBuild(t *testing.T, o Options) []byte {
	t.Helper()
	data, err := Build(policies.FS, "embedded", o)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestBadPack(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "x.rego"), []byte("package other\n\nallow := true\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(os.DirFS(dir), dir, Options{}); err == nil || !strings.Contains(err.Error(), "x.rego") {
		t.Errorf("a package outside data.gpuhost: err = %v, want one naming x.rego", err)
	}
	if _, err := Build(os.DirFS(t.TempDir()), "empty", Options{}); err == nil {
		t.Error("an empty pack bundled")
	}
	if _, err := Build(policies.FS, "embedded", Options{SigningKey: "not a key"}); err == nil {
		t.Error("signed with a garbage key")
	}
}
