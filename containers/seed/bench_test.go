package seed_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/gpuhost/gpuhost/containers/seed"
	"github.com/gpuhost/gpuhost/containers/seed/seedtest"
)

// BenchmarkSeed pulls one image of GPUHOST_BENCH_BYTES (default 1 GiB, one
// layer, a sparse file of zeros on the registry's disk) into a fresh OCI
// layout, with this package ("seed") and with crane.Pull + layout.Write
// ("crane") in the same run. MB/s comes from SetBytes; peak-RSS-MB is the
// process's VmHWM, reset before each run through /proc/self/clear_refs
// (the registry streams from disk, so it adds little to either).
//
//	go test -run=^$ -bench=Seed -benchtime=3x ./containers/seed/
func BenchmarkSeed(b *testing.B) {
	size := int64(1 << 30)
	if v := os.Getenv("GPUHOST_BENCH_BYTES"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			b.Fatal(err)
		}
		size = n
	}
	blobs := b.TempDir()
	reg := seedtest.NewOnDisk(b, blobs)
	dg := putSparseImage(b, reg, blobs, "nvidia/bench", "1g", size)
	ref := "nvcr.io/nvidia/bench:1g"

	b.Run("seed", func(b *testing.B) {
		measure(b, size, func(dir string) error {
			l, err := seed.OpenLayout(dir)
			if err != nil {
				return err
			}
			p, err := l.Pull(context.Background(), ref, dg, seed.Options{Registry: reg.Host, Auth: authn.Anonymous})
			if err != nil {
				return err
			}
			return l.WriteIndex([]*seed.Pulled{p})
		})
	})
	b.Run("crane", func(b *testing.B) {
		measure(b, size, func(dir string) error {
			img, err := crane.Pull(reg.Host + "/nvidia/bench@" + dg)
			if err != nil {
				return err
			}
			lp, err := layout.Write(dir, empty.Index)
			if err != nil {
				return err
			}
			return lp.AppendImage(img)
		})
	})
}

func measure(b *testing.B, size int64, pull func(dir string) error) {
	b.SetBytes(size)
	var peak int64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := filepath.Join(b.TempDir(), "layout")
		runtime.GC()
		debug.FreeOSMemory()
		resetPeakRSS()
		b.StartTimer()
		if err := pull(dir); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		peak = max(peak, peakRSS(b))
		if err := os.RemoveAll(dir); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(float64(peak)/1e6, "peak-RSS-MB")
}

// putSparseImage stores a one-layer image whose layer is size zero bytes
// straight into the registry's blob directory and tags its manifest.
func putSparseImage(b *testing.B, reg *seedtest.Registry, blobs, repo, tag string, size int64) string {
	b.Helper()
	dir := filepath.Join(blobs, "sha256")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	put := func(data []byte) string {
		s := sha256.Sum256(data)
		h := hex.EncodeToString(s[:])
		if err := os.WriteFile(filepath.Join(dir, h), data, 0o644); err != nil {
			b.Fatal(err)
		}
		return "sha256:" + h
	}
	tmp := filepath.Join(dir, "layer")
	f, err := os.Create(tmp)
	if err != nil {
		b.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		b.Fatal(err)
	}
	hs := sha256.New()
	if _, err := io.Copy(hs, f); err != nil {
		b.Fatal(err)
	}
	f.Close()
	layer := hex.EncodeToString(hs.Sum(nil))
	if err := os.Rename(tmp, filepath.Join(dir, layer)); err != nil {
		b.Fatal(err)
	}
	config := []byte(`{"architecture":"amd64","os":"linux","rootfs":{"type":"layers","diff_ids":["sha256:` + layer + `"]}}`)
	cfg := put(config)
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     seed.MediaOCIManifest,
		"config":        map[string]any{"mediaType": "application/vnd.oci.image.config.v1+json", "digest": cfg, "size": len(config)},
		"layers":        []any{map[string]any{"mediaType": "application/vnd.oci.image.layer.v1.tar", "digest": "sha256:" + layer, "size": size}},
	})
	if err != nil {
		b.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPut, fmt.Sprintf("http://%s/v2/%s/manifests/%s", reg.Host, repo, tag), bytes.NewReader(manifest))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", seed.MediaOCIManifest)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		b.Fatalf("putting the manifest: %s", resp.Status)
	}
	s := sha256.Sum256(manifest)
	return "sha256:" + hex.EncodeToString(s[:])
}

// resetPeakRSS asks the kernel to restart VmHWM from the current RSS; where
// that is refused, the figure is the process's peak so far.
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSS reads VmHWM in bytes.
func peakRSS(b *testing.B) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Skip("no /proc/self/status")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmHWM in /proc/self/status")
	return 0
}
