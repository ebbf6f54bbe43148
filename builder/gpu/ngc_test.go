package gpu

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/validate"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/gpuhost/gpuhost/containers/seed/seedtest"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/runtime"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/manifest"
)

// twoBases configures a multi-platform base pinned by a digest field and a
// single-platform one pinned in its ref, both served by reg.
func twoBases(t *testing.T, reg *seedtest.Registry) (map[string]interface{}, v1.ImageIndex, v1.Image) {
	t.Helper()
	amd, _ := random.Image(2048, 2)
	arm, _ := random.Image(2048, 2)
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
	)
	reg.WriteIndex(t, "nvidia/pytorch", "24.08-py3", idx)
	cuda := reg.Push(t, "nvidia/cuda", "12.4.1-base-ubuntu22.04", 1024, 1)
	raw := debianRaw(t)
	raw["ngc_images"] = []interface{}{
		map[string]interface{}{"ref": "nvcr.io/nvidia/pytorch:24.08-py3", "digest": seedtest.Digest(t, idx)},
		map[string]interface{}{"ref": "nvcr.io/nvidia/cuda@" + seedtest.Digest(t, cuda)},
	}
	raw["ngc_registry"] = reg.Host
	return raw, idx, cuda
}

func TestProvisionSeedsNGCImages(t *testing.T) {
	reg := seedtest.New(t)
	raw, idx, cuda := twoBases(t, reg)
	root := newTarget(t)
	// Each run of the plan leaves its package digests, as the real one does.
	comm := &dirComm{root: root, planResult: func(io.Writer) int {
		if err := os.WriteFile(filepath.Join(root, "tmp", digestsStageName), []byte(planDigests), 0o644); err != nil {
			t.Error(err)
		}
		return 0
	}}
	var p Provisioner
	if err := p.Prepare(raw); err != nil {
		t.Fatal(err)
	}
	if err := p.Provision(context.Background(), packersdk.TestUi(t), comm, nil); err != nil {
		t.Fatal(err)
	}

	// The image holds one OCI layout that go-containerregistry reads back
	// whole, pinned index and all, with the amd64 image complete.
	lp, im := seedtest.ReadLayout(t, filepath.Join(root, ImagesDir))
	if len(im.Manifests) != 2 {
		t.Fatalf("index.json lists %d images, want 2", len(im.Manifests))
	}
	seededIdx, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	pyt, err := seededIdx.ImageIndex(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	pm, _ := pyt.IndexManifest()
	amd, err := pyt.Image(pm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(amd); err != nil {
		t.Errorf("seeded amd64 image: %v", err)
	}
	c, err := lp.Image(im.Manifests[1].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(c); err != nil {
		t.Errorf("seeded cuda image: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, ImagesDir, "blobs", "sha256", strings.TrimPrefix(pm.Manifests[1].Digest.String(), "sha256:"))); err == nil {
		t.Error("the arm64 manifest was seeded; only linux/amd64 was asked for")
	}

	// The first-boot unit is installed and enabled; the staging is gone.
	unit, err := os.ReadFile(filepath.Join(root, "etc/systemd/system", ImportUnit))
	if err != nil || string(unit) != ImportUnitText {
		t.Errorf("unit %q, %v", unit, err)
	}
	for _, want := range []string{"ConditionPathExists=!/var/lib/gpuhost/images/.imported", "ctr -n k8s.io images import -", "Type=oneshot", "WantedBy=multi-user.target",
		"Wants=containerd.service", "until ctr version"} {
		if !strings.Contains(ImportUnitText, want) {
			t.Errorf("unit lacks %q", want)
		}
	}
	// A containerd whose first start timed out must not fail the import
	// for good: containerd's own Restart= brings it up later.
	if strings.Contains(ImportUnitText, "Requires=containerd") {
		t.Error("the import requires containerd.service: one start timeout fails it until the next boot")
	}
	if _, err := os.Lstat(filepath.Join(root, "etc/systemd/system/multi-user.target.wants", ImportUnit)); err != nil {
		t.Errorf("unit not enabled: %v", err)
	}
	for _, name := range []string{imagesStageName, imagesScriptName} {
		if _, err := os.Stat(filepath.Join(root, "tmp", name)); err == nil {
			t.Errorf("/tmp/%s left on the target", name)
		}
	}

	// The baked manifest pins both, and the containers collector finds
	// exactly those pins in the image: GH-DRIFT-007's two inputs agree.
	data, err := os.ReadFile(filepath.Join(root, manifest.Path))
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	var pins, found []string
	for _, img := range m.Pins.NGCImages {
		pins = append(pins, img.Ref+" "+img.Digest)
	}
	fsys, closer, err := sysroot.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	env := &collect.Env{FS: fsys, Log: slog.New(slog.DiscardHandler)}
	seeded, err := runtime.CollectContainers(context.Background(), env)
	if err != nil {
		t.Fatal(err)
	}
	for _, img := range seeded.Images {
		found = append(found, img.Ref+" "+img.Digest)
	}
	want := fmt.Sprintf("nvcr.io/nvidia/pytorch:24.08-py3 %s|nvcr.io/nvidia/cuda@%s %s", seedtest.Digest(t, idx), seedtest.Digest(t, cuda), seedtest.Digest(t, cuda))
	if strings.Join(pins, "|") != want {
		t.Errorf("manifest pins %q, want %q", pins, want)
	}
	if len(found) != 2 || found[0] != pins[1] || found[1] != pins[0] {
		t.Errorf("collector found %q, manifest pins %q", found, pins)
	}

	// A second build with the same cache downloads nothing.
	reg.Requests()
	if err := p.Provision(context.Background(), packersdk.TestUi(t), comm, nil); err != nil {
		t.Fatal(err)
	}
	if n := seedtest.Count(reg.Requests(), "/blobs/"); n != 0 {
		t.Errorf("the second build fetched %d blobs, want 0", n)
	}
}

func TestProvisionRefusesADigestMismatch(t *testing.T) {
	reg := seedtest.New(t)
	raw, idx, cuda := twoBases(t, reg)
	pinned, served := seedtest.Digest(t, idx), seedtest.Digest(t, cuda)
	// The mirror answers the pytorch pin with another manifest.
	reg.Wrap = func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		r.URL.Path = strings.Replace(r.URL.Path, "nvidia/pytorch/manifests/"+pinned, "nvidia/cuda/manifests/"+served, 1)
		next.ServeHTTP(w, r)
	}
	root := newTarget(t)
	comm := &dirComm{root: root, planResult: func(io.Writer) int { return 0 }}
	var p Provisioner
	if err := p.Prepare(raw); err != nil {
		t.Fatal(err)
	}
	err := p.Provision(context.Background(), packersdk.TestUi(t), comm, nil)
	for _, want := range []string{"nvcr.io/nvidia/pytorch:24.08-py3", pinned, served, "digest mismatch"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want it to name %s", err, want)
		}
	}
	for _, p := range []string{ImagesDir, manifest.Path} {
		if _, err := os.Stat(filepath.Join(root, p)); err == nil {
			t.Errorf("%s written despite the mismatch", p)
		}
	}
}

func TestPrepareRefusesUnpinnedAndForeignImages(t *testing.T) {
	d := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		images []interface{}
		extra  map[string]interface{}
		want   string
	}{
		{[]interface{}{map[string]interface{}{"ref": "nvcr.io/nvidia/pytorch:24.08-py3"}}, nil, "pin ngc image nvcr.io/nvidia/pytorch:24.08-py3 by digest"},
		{[]interface{}{map[string]interface{}{"ref": "docker.io/library/ubuntu:22.04", "digest": d}}, nil, "image docker.io/library/ubuntu:22.04: registry docker.io is not allowed (ngc_allowed_registries: nvcr.io)"},
		{[]interface{}{map[string]interface{}{"ref": "registry.example.com/base:1", "digest": d}}, map[string]interface{}{"ngc_allowed_registries": []interface{}{"nvcr.io"}}, "registry registry.example.com is not allowed"},
		{[]interface{}{map[string]interface{}{"ref": "nvcr.io/nvidia/cuda@" + d}, map[string]interface{}{"ref": "nvcr.io/nvidia/cuda@" + d}}, nil, "listed twice"},
		{nil, map[string]interface{}{"ngc_platform": "amd64"}, "ngc_platform"},
		{nil, map[string]interface{}{"ngc_registry": "https://mirror"}, "ngc_registry"},
	} {
		raw := debianRaw(t)
		raw["ngc_images"] = tc.images
		for k, v := range tc.extra {
			raw[k] = v
		}
		var p Provisioner
		if err := p.Prepare(raw); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %v: err = %v, want %q", tc.images, tc.extra, err, tc.want)
		}
	}

	// An allowed private registry passes.
	raw := debianRaw(t)
	raw["ngc_images"] = []interface{}{map[string]interface{}{"ref": "registry.example.com/base:1", "digest": d}}
	raw["ngc_allowed_registries"] = []interface{}{"nvcr.io", "registry.example.com"}
	var p Provisioner
	if err := p.Prepare(raw); err != nil {
		t.Errorf("allowed registry refused: %v", err)
	}
}

// failingUpload is a target whose disk fills up after a few files.
type failingUpload struct {
	*dirComm
	left int
}

func (f *failingUpload) Upload(dst string, r io.Reader, fi *os.FileInfo) error {
	if f.left == 0 {
		return fmt.Errorf("no space left on device")
	}
	f.left--
	return f.dirComm.Upload(dst, r, fi)
}

func TestProvisionCleansUpAFailedUpload(t *testing.T) {
	reg := seedtest.New(t)
	raw, _, _ := twoBases(t, reg)
	root := newTarget(t)
	comm := &failingUpload{dirComm: &dirComm{root: root, planResult: func(io.Writer) int { return 0 }}, left: 3}
	var p Provisioner
	if err := p.Prepare(raw); err != nil {
		t.Fatal(err)
	}
	err := p.Provision(context.Background(), packersdk.TestUi(t), comm, nil)
	if err == nil || !strings.Contains(err.Error(), "no space left") || !strings.Contains(err.Error(), "/tmp/"+imagesStageName) {
		t.Fatalf("err = %v, want the failed upload named", err)
	}
	if _, err := os.Stat(filepath.Join(root, "tmp", imagesStageName)); err == nil {
		t.Error("the half-uploaded layout was left on the target")
	}
}
