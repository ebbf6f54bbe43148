// Package seedtest runs go-containerregistry's in-process registry for the
// tests of the seeding code and of the Packer components that use it, with
// a hook to watch or tamper with every request.
package seedtest

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Registry is an in-process registry served over HTTP on loopback.
type Registry struct {
	// Host is host:port, usable as a registry override.
	Host string
	// Wrap, when set, handles every request instead of the registry, which
	// it may call as next.
	Wrap func(w http.ResponseWriter, r *http.Request, next http.Handler)

	mu       sync.Mutex
	requests []Request
}

// Request is one request the registry saw.
type Request struct {
	Method, Path, Range, Authorization string
}

// New starts a registry, holding blobs in memory, that stops when the test
// ends.
func New(t testing.TB) *Registry {
	t.Helper()
	return start(t, registry.NewInMemoryBlobHandler())
}

// NewOnDisk starts a registry whose blobs are files under dir, named
// sha256/<hex>, so that large images cost no memory; a benchmark may put
// blobs there directly.
func NewOnDisk(t testing.TB, dir string) *Registry {
	t.Helper()
	return start(t, diskBlobs{dir: dir})
}

func start(t testing.TB, blobs registry.BlobHandler) *Registry {
	r := &Registry{}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithBlobHandler(blobs))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.requests = append(r.requests, Request{Method: req.Method, Path: req.URL.Path, Range: req.Header.Get("Range"), Authorization: req.Header.Get("Authorization")})
		wrap := r.Wrap
		r.mu.Unlock()
		if wrap != nil {
			wrap(w, req, inner)
			return
		}
		inner.ServeHTTP(w, req)
	}))
	t.Cleanup(srv.Close)
	r.Host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

// Requests returns the requests seen so far and forgets them.
func (r *Registry) Requests() []Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.requests
	r.requests = nil
	return out
}

// Count returns how many of reqs are GETs whose path contains part.
func Count(reqs []Request, part string) int {
	n := 0
	for _, q := range reqs {
		if q.Method == http.MethodGet && strings.Contains(q.Path, part) {
			n++
		}
	}
	return n
}

// Push writes a random image of layers layers of size bytes each as
// repo:tag (repo without the registry) and returns it.
func (r *Registry) Push(t testing.TB, repo, tag string, size, layers int64) v1.Image {
	t.Helper()
	img, err := random.Image(size, layers)
	if err != nil {
		t.Fatal(err)
	}
	r.Write(t, repo, tag, img)
	return img
}

// Write pushes img as repo:tag.
func (r *Registry) Write(t testing.TB, repo, tag string, img v1.Image) {
	t.Helper()
	if err := remote.Write(r.tag(t, repo, tag), img); err != nil {
		t.Fatal(err)
	}
}

// WriteIndex pushes idx as repo:tag.
func (r *Registry) WriteIndex(t testing.TB, repo, tag string, idx v1.ImageIndex) {
	t.Helper()
	if err := remote.WriteIndex(r.tag(t, repo, tag), idx); err != nil {
		t.Fatal(err)
	}
}

func (r *Registry) tag(t testing.TB, repo, tag string) name.Tag {
	t.Helper()
	ref, err := name.NewTag(r.Host + "/" + repo + ":" + tag)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// ReadLayout opens the OCI image layout at dir with go-containerregistry
// and returns it with its index.json.
func ReadLayout(t testing.TB, dir string) (layout.Path, *v1.IndexManifest) {
	t.Helper()
	lp, err := layout.FromPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	ii, err := lp.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := ii.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	return lp, im
}

// Digest returns an image's manifest digest as a string.
func Digest(t testing.TB, img interface{ Digest() (v1.Hash, error) }) string {
	t.Helper()
	h, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return h.String()
}

// diskBlobs serves blobs from files. Unlike go-containerregistry's disk
// handler, Stat does not hash the blob again on every request, which would
// cost a benchmark a full read per GET.
type diskBlobs struct{ dir string }

var (
	_ registry.BlobStatHandler = diskBlobs{}
	_ registry.BlobPutHandler  = diskBlobs{}
)

func (d diskBlobs) path(h v1.Hash) string { return filepath.Join(d.dir, h.Algorithm, h.Hex) }

func (d diskBlobs) Stat(_ context.Context, _ string, h v1.Hash) (int64, error) {
	fi, err := os.Stat(d.path(h))
	if errors.Is(err, os.ErrNotExist) {
		return 0, registry.ErrNotFound
	}
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}

func (d diskBlobs) Get(_ context.Context, _ string, h v1.Hash) (io.ReadCloser, error) {
	f, err := os.Open(d.path(h))
	if errors.Is(err, os.ErrNotExist) {
		return nil, registry.ErrNotFound
	}
	return f, err
}

func (d diskBlobs) Put(_ context.Context, _ string, h v1.Hash, rc io.ReadCloser) error {
	defer rc.Close()
	if err := os.MkdirAll(filepath.Dir(d.path(h)), 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(filepath.Dir(d.path(h)), ".upload-*")
	if err != nil {
		return err
	}
	_, err = io.Copy(f, rc)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), d.path(h))
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
