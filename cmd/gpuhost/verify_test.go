//go:build !lean

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

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

// front is an in-process registry behind a handler a test may put in its
// place, to play a registry that stalls.
type front struct {
	reg http.Handler
	h   atomic.Pointer[http.Handler]
}

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := f.h.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	f.reg.ServeHTTP(w, r)
}

// published gates and publishes the hardened sample as a raw disk to an
// in-process registry with the gpuhost-gate post-processor, signed with a
// fresh key, and returns the image by digest and the public key file.
func published(t *testing.T) (ref, pub string) {
	ref, pub, _ = publishedBehind(t)
	return ref, pub
}

// publishedBehind is published, with the front of its registry.
func publishedBehind(t *testing.T) (ref, pub string, fr *front) {
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
	fr = &front{reg: registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true))}
	srv := httptest.NewServer(fr)
	t.Cleanup(srv.Close)
	priv, pub := testsign.ECDSAKeyFiles(t)
	repo := strings.TrimPrefix(srv.URL, "http://") + "/gpu/debian-12"
	// The sample's crypttab maps / to a LUKS volume this plain disk lacks:
	// GH-ENC-001 rightly fails it, and the test waives it, saying why.
	waivers := filepath.Join(t.TempDir(), "waivers.yaml")
	if err := os.WriteFile(waivers, []byte(`- id: GH-ENC-001
  target: "*"
  justification: the test disk is a plain ext4 image of the sample tree; encrypted disks are tested in images/
  approved_by: verify-tests@example.com
  expires: "2099-01-01"
  ticket: TEST-1
`), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &gate.PostProcessor{SBOM: trivy.SBOM}
	if err := p.Configure(map[string]interface{}{"params": params, "reports": []string{"json"}, "waivers": waivers,
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
	return repo + "@" + res.Image.Digest, pub, fr
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
		if want := "the signed report referrer " + old.DigestStr() + " is missing"; o.code != 2 || !strings.Contains(o.stderr, want) {
			t.Errorf("exit %d, want 2 with %q\nstderr: %s", o.code, want, o.stderr)
		}
	})
	t.Run("missing SBOM", func(t *testing.T) {
		ref, pub := published(t)
		sbom := referrer(t, ref, publish.ArtifactTypeSBOM)
		if err := remote.Delete(sbom); err != nil {
			t.Fatal(err)
		}
		o := gpuhost(t, "", "verify", ref, "--key", pub)
		if want := "the signed sbom referrer " + sbom.DigestStr() + " is missing"; o.code != 2 || !strings.Contains(o.stderr, want) {
			t.Errorf("exit %d, want 2 with %q\nstderr: %s", o.code, want, o.stderr)
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

// TestVerifyIgnoresUnsignedReferrers: referrers pushed beside a signed,
// passing image by someone without the key, however malformed, leave the
// verdict as it was; a registry that trickles its answers is cut at
// --timeout with exit 2, naming itself and the deadline.
func TestVerifyIgnoresUnsignedReferrers(t *testing.T) {
	ref, pub, fr := publishedBehind(t)
	d, err := name.NewDigest(ref)
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Head(d)
	if err != nil {
		t.Fatal(err)
	}
	subject := &v1.Descriptor{MediaType: desc.MediaType, Size: desc.Size, Digest: desc.Digest}
	junk := func(artifactType string, layers []v1.Descriptor, annotations map[string]string) []byte {
		b, err := json.Marshal(v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, ArtifactType: artifactType,
			Config: v1.Descriptor{MediaType: types.OCIEmptyJSON, Size: 2, Digest: v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("4", 64)}},
			Layers: layers, Subject: subject, Annotations: annotations})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	layer := v1.Descriptor{MediaType: "application/x-junk", Size: 1 << 40, Digest: v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("5", 64)}}
	for _, raw := range [][]byte{
		junk(publish.ArtifactTypeReport, nil, nil),
		junk("application/x-junk", []v1.Descriptor{layer}, nil),
		junk(publish.ArtifactTypeSBOM, []v1.Descriptor{layer, layer}, nil),
		junk(publish.ArtifactTypeReport, []v1.Descriptor{layer}, map[string]string{"pad": strings.Repeat("x", 2<<20)}),
	} {
		sum, _, _ := v1.SHA256(bytes.NewReader(raw))
		if err := remote.Put(d.Context().Digest(sum.String()), rawManifest(raw)); err != nil {
			t.Fatal(err)
		}
	}
	if o := gpuhost(t, "", "verify", ref, "--key", pub); o.code != 0 {
		t.Errorf("with junk referrers: exit %d\nstderr: %s", o.code, o.stderr)
	}

	var h http.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.Contains(r.URL.Path, "/manifests/") {
			fr.reg.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		fr.reg.ServeHTTP(rec, r)
		maps.Copy(w.Header(), rec.Header())
		w.WriteHeader(rec.Code)
		for _, c := range rec.Body.Bytes() {
			w.Write([]byte{c})
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(time.Second):
			}
		}
	})
	fr.h.Store(&h)
	host := strings.SplitN(ref, "/", 2)[0]
	o := gpuhost(t, "", "verify", ref, "--key", pub, "--timeout", "2s")
	if want := "the registry " + host + " gave no verdict within the deadline of 2s"; o.code != 2 || !strings.Contains(o.stderr, want) {
		t.Errorf("a trickling registry: exit %d, want 2 with %q\nstderr: %s", o.code, want, o.stderr)
	}
	if o := gpuhost(t, "", "verify", ref, "--key", pub, "--timeout", "0s"); o.code != 2 || !strings.Contains(o.stderr, "--timeout 0s") {
		t.Errorf("--timeout 0s: exit %d\nstderr: %s", o.code, o.stderr)
	}
}

var _ packersdk.Artifact = diskArtifact{}
