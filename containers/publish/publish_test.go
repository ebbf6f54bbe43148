package publish

import (
	"bytes"
	"context"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// newRegistry serves an in-process registry; referrers says whether it
// implements the OCI 1.1 referrers API or needs the tag schema fallback.
func newRegistry(t *testing.T, referrers bool) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(referrers)))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func writeDisk(t *testing.T, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestPushAttachesReferrers(t *testing.T) {
	for _, api := range []bool{true, false} {
		t.Run(map[bool]string{true: "referrers-api", false: "tag-fallback"}[api], func(t *testing.T) {
			ctx := context.Background()
			host := newRegistry(t, api)
			disk := bytes.Repeat([]byte("qcow2 disk image "), 4096)
			file := writeDisk(t, "img.qcow2", disk)
			ref := host + "/gpuhost/debian-12-gpu:build-1"
			res, err := New().Push(ctx, ref, file, []Evidence{
				{ArtifactType: ArtifactTypeReport, Data: []byte(`{"schema":"gpuhost.report/v1"}`)},
				{ArtifactType: ArtifactTypeManifest, Data: []byte(`{"schema":"gpuhost.manifest/v1"}`), Annotations: map[string]string{"k": "v"}},
				{ArtifactType: ArtifactTypeSBOM, Data: []byte(`{"bomFormat":"CycloneDX"}`)},
			})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Referrers) != 3 || res.Image.ArtifactType != ArtifactTypeDiskImage {
				t.Fatalf("result %+v", res)
			}

			// The tag resolves to the disk manifest, whose one layer is the file.
			r, _ := name.ParseReference(ref)
			img, err := remote.Image(r)
			if err != nil {
				t.Fatal(err)
			}
			d, _ := img.Digest()
			if d.String() != res.Image.Digest {
				t.Errorf("tag points at %s, pushed %s", d, res.Image.Digest)
			}
			m, err := img.Manifest()
			if err != nil {
				t.Fatal(err)
			}
			if m.ArtifactType != ArtifactTypeDiskImage || string(m.Config.MediaType) != ArtifactTypeDiskImage ||
				len(m.Layers) != 1 || m.Layers[0].MediaType != MediaTypeQCOW2 || m.Layers[0].Annotations[annotationTitle] != "img.qcow2" {
				t.Errorf("manifest %+v", m)
			}
			ls, _ := img.Layers()
			rc, err := ls[0].Compressed()
			if err != nil {
				t.Fatal(err)
			}
			got, _ := io.ReadAll(rc)
			rc.Close()
			if !bytes.Equal(got, disk) {
				t.Error("the pushed blob is not the disk image")
			}

			refs, err := Referrers(ctx, ref)
			if err != nil {
				t.Fatal(err)
			}
			var types, digests []string
			for _, r := range refs {
				types = append(types, r.ArtifactType)
				digests = append(digests, r.Digest.String())
			}
			slices.Sort(types)
			if want := []string{ArtifactTypeSBOM, ArtifactTypeManifest, ArtifactTypeReport}; !slices.Equal(types, want) {
				t.Errorf("referrer types %v, want %v", types, want)
			}
			for _, p := range res.Referrers {
				if !slices.Contains(digests, p.Digest) {
					t.Errorf("pushed referrer %s not listed", p.Digest)
				}
			}
		})
	}
}

func TestPushRefusesBadInput(t *testing.T) {
	ctx := context.Background()
	host := newRegistry(t, true)
	for _, tc := range []struct {
		name, ref, disk string
		ev              []Evidence
		want            string
	}{
		{"not a disk", host + "/a:b", writeDisk(t, "x.tar", []byte("x")), nil, "not a disk image"},
		{"bad ref", "UPPER CASE/x", writeDisk(t, "x.raw", []byte("x")), nil, "publishing to"},
		{"missing file", host + "/a:b", filepath.Join(t.TempDir(), "gone.raw"), nil, "gone.raw"},
		{"untyped evidence", host + "/a:b", writeDisk(t, "x.raw", []byte("x")), []Evidence{{Data: []byte("{}")}}, "no artifact type"},
		{"directory", host + "/a:b", t.TempDir() + "/d.img", nil, "d.img"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "directory" {
				os.Mkdir(tc.disk, 0o755)
			}
			_, err := New().Push(ctx, tc.ref, tc.disk, tc.ev)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	cat, err := remote.Catalog(ctx, mustRegistry(t, host))
	if err != nil {
		t.Fatal(err)
	}
	if len(cat) != 0 {
		t.Errorf("a refused push wrote %v", cat)
	}
}

func TestBasicAuthIsSent(t *testing.T) {
	var sawAuth bool
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	// The registry challenges for Basic auth, as a private one does.
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || u != "ci" || p != "s3cret" {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		sawAuth = true
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	_, err := New(WithBasicAuth("ci", "s3cret")).Push(context.Background(), host+"/a:b", writeDisk(t, "x.raw", []byte("raw")), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !sawAuth {
		t.Error("the registry never saw the credentials")
	}
	if _, err := New(WithBasicAuth("ci", "wrong")).Push(context.Background(), host+"/a:b", writeDisk(t, "x.raw", []byte("raw")), nil); err == nil {
		t.Error("a push with wrong credentials succeeded")
	}
}

func mustRegistry(t *testing.T, host string) name.Registry {
	t.Helper()
	r, err := name.NewRegistry(host)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestFileLayerStreams: the disk layer is hashed and uploaded from the file,
// so a disk image of many gigabytes never sits in memory.
func TestFileLayerStreams(t *testing.T) {
	p := filepath.Join(t.TempDir(), "big.raw")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	// Sparse: 256 MiB that take no disk.
	if err := f.Truncate(256 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	l, err := newFileLayer(p, MediaTypeRaw)
	if err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 8<<20 {
		t.Errorf("hashing a 256 MiB file allocated %d bytes", grew)
	}
	if size, _ := l.Size(); size != 256<<20 {
		t.Errorf("size %d", size)
	}
	rc, err := l.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if _, ok := rc.(*os.File); !ok {
		t.Errorf("Compressed returns %T, not the file itself", rc)
	}
}

func BenchmarkFileLayerHash(b *testing.B) {
	p := filepath.Join(b.TempDir(), "disk.raw")
	if err := os.WriteFile(p, bytes.Repeat([]byte{0xa5}, 64<<20), 0o644); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(64 << 20)
	for b.Loop() {
		if _, err := newFileLayer(p, MediaTypeRaw); err != nil {
			b.Fatal(err)
		}
	}
}

// TestFailedReferrerLeavesNoTag: the tag is pushed last, so a push that
// fails on its evidence leaves no tagged image without it.
func TestFailedReferrerLeavesNoTag(t *testing.T) {
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.Method == http.MethodPut && bytes.Contains(body, []byte(ArtifactTypeSBOM)) {
			http.Error(w, "refused", http.StatusForbidden)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	ref := strings.TrimPrefix(srv.URL, "http://") + "/gpu/x:v1"
	_, err := New().Push(context.Background(), ref, writeDisk(t, "x.qcow2", []byte("disk")), []Evidence{
		{ArtifactType: ArtifactTypeReport, Data: []byte("{}")},
		{ArtifactType: ArtifactTypeSBOM, Data: []byte(`{"bomFormat":"CycloneDX"}`)},
	})
	if err == nil || !strings.Contains(err.Error(), ArtifactTypeSBOM) {
		t.Fatalf("err = %v", err)
	}
	r, _ := name.ParseReference(ref)
	if _, err := remote.Head(r); err == nil {
		t.Error("the tag exists though the SBOM was refused")
	}
}
