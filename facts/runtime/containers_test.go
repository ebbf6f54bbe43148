package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gpuhost/gpuhost/containers/seed"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

// seededTree is a rootfs with the layout the seeder writes: index.json from
// the seeder itself and, for the images given as present, a real manifest
// whose config and one layer (the body) are blobs that hash to their
// digests. The missing images are listed with no blob at all.
func seededTree(t *testing.T, present, missing map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	var pulled []*seed.Pulled
	tree := map[string]any{"var/lib/gpuhost/images/oci-layout": string(seed.LayoutFile())}
	add := func(images map[string]string, write bool) {
		for ref, body := range images {
			manifest, blobs := imageOf(body)
			d := digestOf(manifest)
			pulled = append(pulled, &seed.Pulled{Ref: ref, Digest: d, MediaType: seed.MediaOCIManifest, Size: int64(len(manifest))})
			if write {
				blobs[d] = manifest
				for digest, b := range blobs {
					tree["var/lib/gpuhost/images/blobs/sha256/"+strings.TrimPrefix(digest, "sha256:")] = b
				}
			}
		}
	}
	add(present, true)
	add(missing, false)
	idx, err := seed.IndexJSON(pulled)
	if err != nil {
		t.Fatal(err)
	}
	tree["var/lib/gpuhost/images/index.json"] = idx
	collecttest.WriteTree(t, dir, tree)
	return dir
}

// imageOf is an OCI image whose one layer is body: its manifest, and its
// config and layer blobs by digest.
func imageOf(body string) (manifest string, blobs map[string]string) {
	config := `{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":["` + digestOf(body) + `"]}}`
	desc := func(mt, b string) string {
		return fmt.Sprintf(`{"mediaType":%q,"digest":%q,"size":%d}`, mt, digestOf(b), len(b))
	}
	manifest = `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json","config":` +
		desc("application/vnd.oci.image.config.v1+json", config) + `,"layers":[` + desc("application/vnd.oci.image.layer.v1.tar", body) + `]}`
	return manifest, map[string]string{digestOf(config): config, digestOf(body): body}
}

// manifestDigest is the digest of imageOf(body)'s manifest.
func manifestDigest(body string) string {
	m, _ := imageOf(body)
	return digestOf(m)
}

func digestOf(body string) string {
	s := sha256.Sum256([]byte(body))
	return "sha256:" + hex.EncodeToString(s[:])
}

func TestContainersReadsTheSeededLayout(t *testing.T) {
	dir := seededTree(t,
		map[string]string{
			"nvcr.io/nvidia/pytorch:24.08-py3":                       `{"schemaVersion":2,"a":1}`,
			"nvcr.io/nvidia/cuda@sha256:" + strings.Repeat("ab", 32): `{"schemaVersion":2,"b":2}`,
		},
		map[string]string{"nvcr.io/nvidia/tritonserver:24.08-py3": `{"schemaVersion":2,"c":3}`},
	)
	for _, live := range []bool{false, true} {
		f := newDoc(facts.KindRootfs)
		if live {
			f.Target.Kind = facts.KindHost
		}
		var err error
		if f.Containers, err = CollectContainers(context.Background(), collecttest.NewEnv(t, dir, live)); err != nil {
			t.Fatal(err)
		}
		want := []facts.ContainerImage{
			{Ref: "nvcr.io/nvidia/cuda@sha256:" + strings.Repeat("ab", 32), Digest: manifestDigest(`{"schemaVersion":2,"b":2}`), Source: SeededImagesDir},
			{Ref: "nvcr.io/nvidia/pytorch:24.08-py3", Digest: manifestDigest(`{"schemaVersion":2,"a":1}`), Source: SeededImagesDir},
		}
		got, _ := json.Marshal(f.Containers)
		exp, _ := json.Marshal(facts.Containers{Images: want, Damaged: []facts.DamagedImage{{
			Ref: "nvcr.io/nvidia/tritonserver:24.08-py3", Digest: manifestDigest(`{"schemaVersion":2,"c":3}`),
			Reason: "manifest blob " + manifestDigest(`{"schemaVersion":2,"c":3}`) + " is missing",
		}}})
		if string(got) != string(exp) {
			t.Errorf("live=%v: containers\n%s\nwant (triton's blob is missing, so it is not seeded)\n%s", live, got, exp)
		}
		f.Record("containers", facts.StatusOK, "")
		if err := facts.Validate(*f); err != nil {
			t.Errorf("facts do not validate: %v", err)
		}
	}
}

// TestSeededImageRefs lists what was seeded, blobs present or not (the
// refs are what containerd was given to import), and nothing without a
// layout; a bad index names the file.
func TestSeededImageRefs(t *testing.T) {
	dir := seededTree(t,
		map[string]string{"nvcr.io/nvidia/pytorch:24.08-py3": `{"schemaVersion":2,"a":1}`},
		map[string]string{"nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04": `{"schemaVersion":2,"b":2}`},
	)
	refs, err := SeededImageRefs(collecttest.NewEnv(t, dir, true).FS)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", "nvcr.io/nvidia/pytorch:24.08-py3"}; strings.Join(refs, " ") != strings.Join(want, " ") {
		t.Errorf("refs %q, want %q", refs, want)
	}
	if refs, err := SeededImageRefs(collecttest.NewEnv(t, t.TempDir(), true).FS); err != nil || len(refs) != 0 {
		t.Errorf("no layout: refs %q, err %v; want none", refs, err)
	}
	bad := t.TempDir()
	collecttest.WriteTree(t, bad, map[string]any{"var/lib/gpuhost/images/index.json": "{"})
	if _, err := SeededImageRefs(collecttest.NewEnv(t, bad, true).FS); err == nil || !strings.Contains(err.Error(), "var/lib/gpuhost/images/index.json") {
		t.Errorf("bad index: err %v, want the file named", err)
	}
}

func TestContainersWithoutALayoutHasNoImages(t *testing.T) {
	f, err := containersOf(t, collecttest.NewEnv(t, t.TempDir(), false))
	if err != nil {
		t.Fatal(err)
	}
	if f.Containers == nil || f.Containers.Images == nil || len(f.Containers.Images) != 0 {
		t.Errorf("containers %+v, want an empty list", f.Containers)
	}
	got, _ := json.Marshal(f.Containers)
	if string(got) != `{"images":[]}` {
		t.Errorf("containers JSON %s", got)
	}
}

func TestContainersBadIndexNamesTheFile(t *testing.T) {
	for name, body := range map[string]string{
		"not json":     "{",
		"wrong schema": `{"schemaVersion":1,"manifests":[]}`,
		"bad digest":   `{"schemaVersion":2,"manifests":[{"digest":"sha256:../../etc/shadow"}]}`,
		"control char": `{"schemaVersion":2,"manifests":[{"digest":"sha256:` + strings.Repeat("0", 64) + `","annotations":{"io.containerd.image.name":"a\nb"}}]}`,
		"trailing":     `{"schemaVersion":2,"manifests":[]} {}`,
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			collecttest.WriteTree(t, dir, map[string]any{"var/lib/gpuhost/images/index.json": body})
			_, err := CollectContainers(context.Background(), collecttest.NewEnv(t, dir, false))
			if err == nil || !strings.Contains(err.Error(), "var/lib/gpuhost/images/index.json") {
				t.Errorf("err = %v, want the file named", err)
			}
		})
	}
}

func TestContainersHostileLayout(t *testing.T) {
	t.Run("index.json is a FIFO", func(t *testing.T) {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "var/lib/gpuhost/images"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(filepath.Join(dir, "var/lib/gpuhost/images/index.json"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := CollectContainers(context.Background(), collecttest.NewEnv(t, dir, false))
		if err == nil || !strings.Contains(err.Error(), "index.json") {
			t.Errorf("err = %v, want the FIFO refused by name", err)
		}
	})
	t.Run("the layout links out of the root", func(t *testing.T) {
		outside := seededTree(t, map[string]string{"nvcr.io/nvidia/cuda:12": `{"schemaVersion":2}`}, nil)
		dir := t.TempDir()
		collecttest.WriteTree(t, dir, map[string]any{
			"var/lib/gpuhost/images": collecttest.Symlink(filepath.Join(outside, "var/lib/gpuhost/images")),
		})
		f, err := containersOf(t, collecttest.NewEnv(t, dir, false))
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Containers.Images) != 0 {
			t.Errorf("images %+v read from outside the root", f.Containers.Images)
		}
	})
	t.Run("a manifest blob that is a directory", func(t *testing.T) {
		body := `{"schemaVersion":2}`
		dir := seededTree(t, nil, map[string]string{"nvcr.io/nvidia/cuda:12": body})
		collecttest.WriteTree(t, dir, map[string]any{"var/lib/gpuhost/images/blobs/sha256/" + strings.TrimPrefix(manifestDigest(body), "sha256:") + "/": nil})
		f, err := containersOf(t, collecttest.NewEnv(t, dir, false))
		if err != nil {
			t.Fatal(err)
		}
		if len(f.Containers.Images) != 0 {
			t.Errorf("images %+v: a directory is no blob", f.Containers.Images)
		}
	})
	t.Run("too many images", func(t *testing.T) {
		entry := `{"digest":"sha256:` + strings.Repeat("0", 64) + `"}`
		body := `{"schemaVersion":2,"manifests":[` + strings.TrimSuffix(strings.Repeat(entry+",", maxSeededImages+1), ",") + `]}`
		if _, err := parseImageIndex([]byte(body)); err == nil || !strings.Contains(err.Error(), "more than") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestParseImageIndexPrefersContainerdName(t *testing.T) {
	d := "sha256:" + strings.Repeat("1", 64)
	got, err := parseImageIndex([]byte(`{"schemaVersion":2,"manifests":[
		{"digest":"` + d + `","annotations":{"org.opencontainers.image.ref.name":"24.08","io.containerd.image.name":"nvcr.io/nvidia/pytorch:24.08-py3"}},
		{"digest":"` + d + `","annotations":{"org.opencontainers.image.ref.name":"nvcr.io/nvidia/cuda:12"}},
		{"digest":"` + d + `"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var refs []string
	for _, g := range got {
		refs = append(refs, g.Ref)
	}
	if strings.Join(refs, "|") != "|nvcr.io/nvidia/cuda:12|nvcr.io/nvidia/pytorch:24.08-py3" {
		t.Errorf("refs %q", refs)
	}
}

// TestContainersVerifiesEveryBlob: an image counts as seeded only when its
// manifest, config and layers are all there and hash to their digests; an
// empty file named after a layer's digest, a changed byte or a short blob
// make it damaged, named with the blob at fault.
func TestContainersVerifiesEveryBlob(t *testing.T) {
	const ref, body = "nvcr.io/nvidia/cuda:12.2.0-base-ubuntu22.04", "layer bytes"
	layer := "var/lib/gpuhost/images/blobs/sha256/" + strings.TrimPrefix(digestOf(body), "sha256:")
	for name, tc := range map[string]struct {
		content string
		want    string
	}{
		"whole":        {body, ""},
		"empty layer":  {"", "is 0 bytes; its descriptor says 11"},
		"one byte off": {"layer bytez", "does not hash to its digest"},
		"short":        {"layer", "is 5 bytes; its descriptor says 11"},
	} {
		t.Run(name, func(t *testing.T) {
			dir := seededTree(t, map[string]string{ref: body}, nil)
			collecttest.WriteTree(t, dir, map[string]any{layer: tc.content})
			f, err := containersOf(t, collecttest.NewEnv(t, dir, false))
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case tc.want == "" && (len(f.Containers.Images) != 1 || len(f.Containers.Damaged) != 0):
				t.Errorf("a whole image: %+v", f.Containers)
			case tc.want != "" && (len(f.Containers.Images) != 0 || len(f.Containers.Damaged) != 1 || !strings.Contains(f.Containers.Damaged[0].Reason, tc.want)):
				t.Errorf("containers %+v, want the image damaged: %q", f.Containers, tc.want)
			}
		})
	}
}

// containersOf runs CollectContainers over env into a new document.
func containersOf(t *testing.T, env *collect.Env) (*facts.Facts, error) {
	t.Helper()
	c, err := CollectContainers(context.Background(), env)
	f := newDoc(facts.KindRootfs)
	f.Containers = c
	return f, err
}
