//go:build !lean

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/gpuhost/gpuhost/builder/gate"
	"github.com/gpuhost/gpuhost/containers/publish"
	"github.com/gpuhost/gpuhost/containers/trivy"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/internal/testutil/testsign"
)

// diskArtifact is what the rootfs builder hands the gate: a raw disk.
type diskArtifact struct{ disk, rootfs string }

func (a diskArtifact) BuilderId() string { return "gpuhost.rootfs" }
func (a diskArtifact) Files() []string   { return []string{a.disk} }
func (a diskArtifact) Id() string        { return "verify-test" }
func (a diskArtifact) String() string    { return "verify test disk" }
func (a diskArtifact) State(n string) interface{} {
	if n == "rootfs" {
		return a.rootfs
	}
	return nil
}
func (a diskArtifact) Destroy() error { return nil }

// published gates and publishes the hardened sample as a raw disk to an
// in-process registry with the gpuhost-gate post-processor, signed with a
// fresh key, and returns the image by digest and the public key file.
func published(t *testing.T) (ref, pub string) {
	t.Helper()
	mkfs := testutil.Tool(t, "mkfs.ext4", "e2fsprogs")
	rootfs := filepath.Join(t.TempDir(), "rootfs")
	if out, err := exec.Command("cp", "-a", hardened+"/.", rootfs).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	man := `{"schema":"gpuhost.manifest/v1","pins":{"driver":"535.261.03-1","packages":[],"ngc_images":[]},"packages":[],"config_files":[],"build":{"template":"verify-test","time":"2026-01-01T00:00:00Z"}}`
	if err := os.MkdirAll(filepath.Join(rootfs, "etc/gpuhost"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(rootfs, "etc/gpuhost/manifest.json"), []byte(man), 0o644); err != nil {
		t.Fatal(err)
	}
	disk := filepath.Join(t.TempDir(), "debian-12-gpu.raw")
	if out, err := exec.Command(mkfs, "-q", "-F", "-d", rootfs, disk, "16M").CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v\n%s", err, out)
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true)))
	t.Cleanup(srv.Close)
	priv, pub := testsign.ECDSAKeyFiles(t)
	repo := strings.TrimPrefix(srv.URL, "http://") + "/gpu/debian-12"
	p := &gate.PostProcessor{SBOM: trivy.SBOM}
	if err := p.Configure(map[string]interface{}{"params": params, "reports": []string{"json"},
		"publish": map[string]interface{}{"repository": repo, "tag": "v1", "template_file": "verify_test.go",
			"signing": map[string]interface{}{"key_file": priv}}}); err != nil {
		t.Fatal(err)
	}
	var gateLog bytes.Buffer
	ui := &packersdk.BasicUi{Reader: strings.NewReader(""), Writer: &gateLog, ErrorWriter: &gateLog}
	out, _, _, err := p.PostProcess(context.Background(), ui, diskArtifact{disk, rootfs})
	if err != nil {
		t.Fatalf("gate: %v\n%s", err, gateLog.String())
	}
	res := out.State("published").(*publish.Result)
	return repo + "@" + res.Image.Digest, pub
}

// referrer returns the referrer of image with artifactType.
func referrer(t *testing.T, image, artifactType string) name.Digest {
	t.Helper()
	refs, err := publish.Referrers(context.Background(), image)
	if err != nil {
		t.Fatal(err)
	}
	d, err := name.NewDigest(image)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range refs {
		if r.ArtifactType == artifactType {
			return d.Context().Digest(r.Digest.String())
		}
	}
	t.Fatalf("%s has no %s referrer", image, artifactType)
	return name.Digest{}
}

// rawManifest is a manifest pushed as the bytes given.
type rawManifest []byte

func (m rawManifest) RawManifest() ([]byte, error)        { return m, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

// pushReferrer pushes a referrer like old, with data as its layer, as
// someone with push rights but not the key could.
func pushReferrer(t *testing.T, old name.Digest, data []byte) {
	t.Helper()
	desc, err := remote.Get(old)
	if err != nil {
		t.Fatal(err)
	}
	var m v1.Manifest
	if err := json.Unmarshal(desc.Manifest, &m); err != nil {
		t.Fatal(err)
	}
	l := static.NewLayer(data, m.Layers[0].MediaType)
	if err := remote.WriteLayer(old.Context(), l); err != nil {
		t.Fatal(err)
	}
	h, _ := l.Digest()
	m.Layers[0].Digest, m.Layers[0].Size = h, int64(len(data))
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	sum, _, _ := v1.SHA256(bytes.NewReader(raw))
	if err := remote.Put(old.Context().Digest(sum.String()), rawManifest(raw)); err != nil {
		t.Fatal(err)
	}
}

// replaceReferrer swaps a referrer for one holding data instead.
func replaceReferrer(t *testing.T, old name.Digest, data []byte) {
	t.Helper()
	pushReferrer(t, old, data)
	if err := remote.Delete(old); err != nil {
		t.Fatal(err)
	}
}

func TestVerifyPublishedImage(t *testing.T) {
	ref, pub := published(t)
	o := gpuhost(t, "", "verify", ref, "--key", pub, "--max-age", "7d", "--fail-on", "high")
	if o.code != 0 || !strings.Contains(o.stdout, "verified") || !strings.Contains(o.stdout, "provenance: ok") {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", o.code, o.stdout, o.stderr)
	}
	t.Logf("verify:\n%s", o.stdout)
	var policy string
	for _, l := range strings.Split(o.stdout, "\n") {
		if v, ok := strings.CutPrefix(l, "policy:"); ok {
			policy = strings.TrimSpace(v)
		}
	}
	if !strings.HasPrefix(policy, "sha256:") {
		t.Fatalf("no policy digest in:\n%s", o.stdout)
	}
	if o := gpuhost(t, "", "verify", ref, "--key", pub, "--policy-digest", policy); o.code != 0 {
		t.Errorf("--policy-digest of the pack in use: exit %d: %s", o.code, o.stderr)
	}

	_, otherPub := testsign.ECDSAKeyFiles(t)
	tag := strings.SplitN(ref, "@", 2)[0] + ":v1"
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"another key", []string{ref, "--key", otherPub}, 2, "verifying the signature"},
		{"another policy digest", []string{ref, "--key", pub, "--policy-digest", "sha256:" + strings.Repeat("0", 64)}, 1, "made with policy " + policy},
		{"too old", []string{ref, "--key", pub, "--max-age", "1ns"}, 1, "old (scanned"},
		{"a tag, not a digest", []string{tag, "--key", pub}, 2, "pin the digest"},
		{"no key", []string{ref}, 2, "--key is required"},
		{"bad max-age", []string{ref, "--key", pub, "--max-age", "a week"}, 2, "--max-age"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := gpuhost(t, "", append([]string{"verify"}, tc.args...)...)
			if o.code != tc.code || !strings.Contains(o.stderr, tc.want) {
				t.Errorf("exit %d, want %d with %q\nstdout: %s\nstderr: %s", o.code, tc.code, tc.want, o.stdout, o.stderr)
			}
		})
	}
}

// TestVerifyRefusesTamperedEvidence: a report or SBOM swapped or removed
// by someone who can push but lacks the key is refused with exit 2.
func TestVerifyRefusesTamperedEvidence(t *testing.T) {
	t.Run("tampered report", func(t *testing.T) {
		ref, pub := published(t)
		old := referrer(t, ref, publish.ArtifactTypeReport)
		img, err := remote.Image(old)
		if err != nil {
			t.Fatal(err)
		}
		ls, _ := img.Layers()
		rc, _ := ls[0].Compressed()
		data, _ := io.ReadAll(rc)
		rc.Close()
		forged := strings.Replace(string(data), `"status": "fail"`, `"status": "pass"`, -1)
		forged = strings.Replace(forged, `"tool_version"`, `"tool_version_note": "edited",  "tool_version"`, 1)
		replaceReferrer(t, old, []byte(forged))
		o := gpuhost(t, "", "verify", ref, "--key", pub)
		if o.code != 2 || !strings.Contains(o.stderr, "tampered") {
			t.Errorf("exit %d, want 2 naming the tampering\nstderr: %s", o.code, o.stderr)
		}
	})
	t.Run("missing SBOM", func(t *testing.T) {
		ref, pub := published(t)
		if err := remote.Delete(referrer(t, ref, publish.ArtifactTypeSBOM)); err != nil {
			t.Fatal(err)
		}
		o := gpuhost(t, "", "verify", ref, "--key", pub)
		if o.code != 2 || !strings.Contains(o.stderr, "no sbom referrer") {
			t.Errorf("exit %d, want 2 naming the SBOM\nstderr: %s", o.code, o.stderr)
		}
	})
	t.Run("a second report beside the signed one", func(t *testing.T) {
		// Anyone who can push may add referrers: the signed one still
		// decides.
		ref, pub := published(t)
		pushReferrer(t, referrer(t, ref, publish.ArtifactTypeReport), []byte(`{"schema":"gpuhost.report/v1"}`))
		if o := gpuhost(t, "", "verify", ref, "--key", pub); o.code != 0 {
			t.Errorf("exit %d\nstderr: %s", o.code, o.stderr)
		}
	})
}

var _ packersdk.Artifact = diskArtifact{}
