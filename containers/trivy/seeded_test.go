package trivy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/runtime"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/target/collector"
	"github.com/gpuhost/gpuhost/target/domains"
)

// seedInto copies an OCI layout into root where the gpuhost-gpu
// provisioner seeds bases.
func seedInto(t *testing.T, root, layoutDir string) {
	t.Helper()
	dst := filepath.Join(root, runtime.SeededImagesDir)
	if err := os.CopyFS(dst, os.DirFS(layoutDir)); err != nil {
		t.Fatal(err)
	}
}

// collectSeeded runs the containers and vulnerabilities collectors over
// root as a scan with --trivy-db does.
func collectSeeded(t *testing.T, root, dbDir string) *facts.Facts {
	t.Helper()
	fsys, closer, err := sysroot.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	f := facts.New(facts.KindRootfs, root, time.Unix(0, 0))
	cs := []collector.Collector{domains.Containers(), VulnerabilitiesCollector(dbDir)}
	if err := collector.Run(context.Background(), &collect.Env{FS: fsys}, f, cs); err != nil {
		t.Fatal(err)
	}
	if err := facts.Validate(*f); err != nil {
		t.Fatalf("facts do not validate: %v", err)
	}
	return f
}

// The bases seeded into an image are matched from their own layers, per
// digest, beside the image's own packages: the top layer drops bash, and
// the findings are those of the packages left.
func TestSeededBasesAreMatchedPerDigest(t *testing.T) {
	dbDir := buildDB(t, "bookworm")
	root := bookworm(t)
	layoutDir, digest := bookwormImage(t)
	seedInto(t, root, layoutDir)
	f := collectSeeded(t, root, dbDir)
	v := f.Vulnerabilities
	if v == nil || v.ImagesError != "" || len(v.Images) != 1 {
		t.Fatalf("vulnerabilities: %+v (collectors %+v)", v, f.Collectors)
	}
	img := v.Images[0]
	if img.Ref != "nvcr.io/nvidia/cuda:12.2.0-base-debian12" || img.Digest != digest || img.OS != "debian 12" || img.Error != "" {
		t.Errorf("image: %+v", img)
	}
	var ids []string
	for _, fd := range img.Findings {
		ids = append(ids, fd.Package+" "+fd.ID)
	}
	want := []string{"libssl3 CVE-2023-50782", "libssl3 CVE-2024-5535", "openssl CVE-2023-50782", "openssl CVE-2024-5535"}
	if !slices.Equal(ids, want) {
		t.Errorf("image findings = %q, want %q", ids, want)
	}
}

// A base whose layer the target changed after the containers collector
// hashed it, or that has no package database, is an error of its own:
// its findings are unknown, never none.
func TestSeededBaseThatCannotBeMatched(t *testing.T) {
	dbDir := buildDB(t, "bookworm")
	t.Run("no package database", func(t *testing.T) {
		root := bookworm(t)
		layoutDir, _ := seededLayout(t, "nvcr.io/nvidia/distroless:1", layerOf(t, tarEntry{name: "app", data: []byte("x")}))
		seedInto(t, root, layoutDir)
		v := collectSeeded(t, root, dbDir).Vulnerabilities
		if len(v.Images) != 1 || !strings.Contains(v.Images[0].Error, "os-release") {
			t.Fatalf("images: %+v, want one whose error names the missing os-release", v.Images)
		}
	})
	t.Run("layer swapped after listing", func(t *testing.T) {
		root := bookworm(t)
		layoutDir, digest := bookwormImage(t)
		seedInto(t, root, layoutDir)
		fsys, closer, err := sysroot.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		defer closer.Close()
		f := facts.New(facts.KindRootfs, root, time.Unix(0, 0))
		if err := collector.Run(context.Background(), &collect.Env{FS: fsys}, f, []collector.Collector{domains.Containers()}); err != nil {
			t.Fatal(err)
		}
		l := targetLayout{fsys: fsys, dir: runtime.SeededImagesDir}
		img, err := l.image(digest)
		if err != nil {
			t.Fatal(err)
		}
		// The lower layer's blob now holds the upper one's bytes: a whole
		// gzip tar, so only its digest tells them apart.
		layers, _ := img.Layers()
		lower, _ := layers[0].Digest()
		upper, _ := layers[1].Digest()
		blobs := filepath.Join(root, runtime.SeededImagesDir, "blobs", "sha256")
		data, err := os.ReadFile(filepath.Join(blobs, upper.Hex))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(blobs, lower.Hex), data, 0o644); err != nil {
			t.Fatal(err)
		}
		if status, reason := collect.Classify(VulnerabilitiesCollector(dbDir).Collect(context.Background(), &collect.Env{FS: fsys}, f)); status != facts.StatusOK {
			t.Fatalf("collector: %s (%s)", status, reason)
		}
		imgs := f.Vulnerabilities.Images
		if len(imgs) != 1 || !strings.Contains(imgs[0].Error, "does not hash to its digest") || len(imgs[0].Findings) != 0 {
			t.Fatalf("images: %+v, want the swapped layer named", imgs)
		}
	})
	t.Run("bases not listed", func(t *testing.T) {
		fsys, closer, err := sysroot.Open(bookworm(t))
		if err != nil {
			t.Fatal(err)
		}
		defer closer.Close()
		f := facts.New(facts.KindRootfs, "t", time.Unix(0, 0))
		f.Record("containers", facts.StatusError, "reading /var/lib/gpuhost/images/index.json: permission denied")
		if status, reason := collect.Classify(VulnerabilitiesCollector(dbDir).Collect(context.Background(), &collect.Env{FS: fsys}, f)); status != facts.StatusOK {
			t.Fatalf("collector: %s (%s)", status, reason)
		}
		if e := f.Vulnerabilities.ImagesError; !strings.Contains(e, "permission denied") {
			t.Errorf("images_error = %q, want the containers collector's reason", e)
		}
	})
}

// The scan's deadline holds inside a layer: a cancelled scan stops reading
// the base and says why, rather than decompressing it to the end.
func TestSeededBaseStopsAtTheDeadline(t *testing.T) {
	root := bookworm(t)
	layoutDir, digest := bookwormImage(t)
	seedInto(t, root, layoutDir)
	fsys, closer, err := sysroot.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	img, err := targetLayout{fsys: fsys, dir: runtime.SeededImagesDir, ctx: ctx}.image(digest)
	if err != nil {
		t.Fatal(err)
	}
	_, err = imageInventory(context.Background(), img, "base")
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "reading layer sha256:") {
		t.Fatalf("err = %v, want the layer read stopped by the scan's context", err)
	}
}
