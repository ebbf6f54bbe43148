// Package seedtest runs go-containerregistry's in-process registry for the
// tests of the seeding code and of the Packer components that use it, with
// a hook to watch or tamper with every request.
package seedtest

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
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

// New starts a registry that stops when the test ends.
func New(t testing.TB) *Registry {
	t.Helper()
	r := &Registry{}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
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
	ref, err := name.NewTag(r.Host + "/" + repo + ":" + tag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
}

// WriteIndex pushes idx as repo:tag.
func (r *Registry) WriteIndex(t testing.TB, repo, tag string, idx v1.ImageIndex) {
	t.Helper()
	ref, err := name.NewTag(r.Host + "/" + repo + ":" + tag)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
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
