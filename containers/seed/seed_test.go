package seed_test

import (
	"context"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/authn"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/validate"

	"github.com/gpuhost/gpuhost/containers/seed"
	"github.com/gpuhost/gpuhost/containers/seed/seedtest"
)

const cudaRef = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"

// opts fetch from the test registry as a mirror of nvcr.io, anonymously,
// without waiting between retries.
func opts(reg *seedtest.Registry) seed.Options {
	return seed.Options{Registry: reg.Host, Auth: authn.Anonymous, Backoff: 1}
}

func TestPullByDigestWritesAValidLayout(t *testing.T) {
	reg := seedtest.New(t)
	img := reg.Push(t, "nvidia/cuda", "12.4.1-base-ubuntu22.04", 4096, 3)
	dg := seedtest.Digest(t, img)

	dir := t.TempDir()
	l, err := seed.OpenLayout(dir)
	if err != nil {
		t.Fatal(err)
	}
	var completed int
	o := opts(reg)
	o.Progress = func(p seed.Progress) {
		if p.Complete && p.Ref == cudaRef {
			completed++
		}
	}
	p, err := l.Pull(context.Background(), cudaRef, dg, o)
	if err != nil {
		t.Fatal(err)
	}
	if p.Digest != dg || p.Ref != cudaRef || len(p.Blobs) != 5 {
		t.Fatalf("pulled %+v", p)
	}
	if completed != 4 {
		t.Errorf("%d blobs reported complete, want 4 (config and 3 layers)", completed)
	}
	if err := l.WriteIndex([]*seed.Pulled{p}); err != nil {
		t.Fatal(err)
	}

	// go-containerregistry reads the layout back and finds every blob
	// intact.
	lp, im := seedtest.ReadLayout(t, dir)
	if len(im.Manifests) != 1 || im.Manifests[0].Digest.String() != dg ||
		im.Manifests[0].Annotations[seed.AnnotationContainerdName] != cudaRef ||
		im.Manifests[0].Annotations[seed.AnnotationRefName] != cudaRef {
		t.Fatalf("index %+v", im.Manifests)
	}
	got, err := lp.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := validate.Image(got); err != nil {
		t.Errorf("the seeded image does not validate: %v", err)
	}
	assertNoPartials(t, dir)
}

func TestPullSkipsBlobsAlreadyInTheLayout(t *testing.T) {
	reg := seedtest.New(t)
	img := reg.Push(t, "nvidia/cuda", "12.4.1-base-ubuntu22.04", 2048, 2)
	dg := seedtest.Digest(t, img)
	l, err := seed.OpenLayout(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Pull(context.Background(), cudaRef, dg, opts(reg)); err != nil {
		t.Fatal(err)
	}
	if n := seedtest.Count(reg.Requests(), "/blobs/"); n != 3 {
		t.Fatalf("first pull fetched %d blobs, want 3", n)
	}
	p, err := l.Pull(context.Background(), cudaRef, dg, opts(reg))
	if err != nil {
		t.Fatal(err)
	}
	reqs := reg.Requests()
	if n := seedtest.Count(reqs, "/blobs/") + seedtest.Count(reqs, "/manifests/"); n != 0 {
		t.Errorf("second pull made %d GETs, want 0: %+v", n, reqs)
	}
	if p.Fetched != 0 || p.Cached == 0 {
		t.Errorf("fetched %d, cached %d", p.Fetched, p.Cached)
	}

	// A cached blob of the right size and the wrong bytes (a crash before
	// writeback) is fetched again.
	layers, _ := img.Layers()
	layer, _ := layers[0].Digest()
	bad := filepath.Join(l.Dir(), "blobs", "sha256", layer.Hex)
	fi, err := os.Stat(bad)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, make([]byte, fi.Size()), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Pull(context.Background(), cudaRef, dg, opts(reg)); err != nil {
		t.Fatal(err)
	}
	if n := seedtest.Count(reg.Requests(), "/blobs/"); n != 1 {
		t.Errorf("%d blobs fetched after corrupting one, want 1", n)
	}
	if err := validateBlob(l.Dir(), layer); err != nil {
		t.Error(err)
	}
}

func TestPullResumesAnInterruptedBlob(t *testing.T) {
	reg := seedtest.New(t)
	img := reg.Push(t, "nvidia/cuda", "12.4.1-base-ubuntu22.04", 1<<20, 1)
	dg := seedtest.Digest(t, img)
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	layer, err := layers[0].Digest()
	if err != nil {
		t.Fatal(err)
	}
	cut := true
	reg.Wrap = func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if cut && strings.HasSuffix(r.URL.Path, "/blobs/"+layer.String()) {
			cut = false
			// Half the blob, then the connection drops.
			rec := &halfWriter{ResponseWriter: w, left: 300 << 10}
			next.ServeHTTP(rec, r)
			panic(http.ErrAbortHandler)
		}
		next.ServeHTTP(w, r)
	}
	dir := t.TempDir()
	l, _ := seed.OpenLayout(dir)
	if _, err := l.Pull(context.Background(), cudaRef, dg, opts(reg)); err != nil {
		t.Fatal(err)
	}
	var ranges []string
	for _, q := range reg.Requests() {
		if q.Method == http.MethodGet && strings.HasSuffix(q.Path, layer.String()) {
			ranges = append(ranges, q.Range)
		}
	}
	if len(ranges) != 2 || ranges[0] != "" || !strings.HasPrefix(ranges[1], "bytes=") || ranges[1] == "bytes=0-" {
		t.Errorf("layer requests' Range headers %q, want a full request then a resume", ranges)
	}
	if err := validateBlob(dir, layer); err != nil {
		t.Error(err)
	}
	assertNoPartials(t, dir)
}

// halfWriter passes on the first left bytes of a body.
type halfWriter struct {
	http.ResponseWriter
	left int
}

func (h *halfWriter) Write(b []byte) (int, error) {
	if h.left <= 0 {
		return 0, io.ErrClosedPipe
	}
	if len(b) > h.left {
		b = b[:h.left]
	}
	h.left -= len(b)
	n, err := h.ResponseWriter.Write(b)
	if f, ok := h.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
	return n, err
}

func TestPullRefusesACorruptBlobAndLeavesNothing(t *testing.T) {
	reg := seedtest.New(t)
	img := reg.Push(t, "nvidia/cuda", "12.4.1-base-ubuntu22.04", 1024, 1)
	dg := seedtest.Digest(t, img)
	layers, _ := img.Layers()
	layer, _ := layers[0].Digest()
	reg.Wrap = func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if strings.HasSuffix(r.URL.Path, "/blobs/"+layer.String()) {
			next.ServeHTTP(&flipWriter{ResponseWriter: w}, r)
			return
		}
		next.ServeHTTP(w, r)
	}
	dir := t.TempDir()
	l, _ := seed.OpenLayout(dir)
	o := opts(reg)
	o.Retries = 2
	_, err := l.Pull(context.Background(), cudaRef, dg, o)
	if err == nil || !strings.Contains(err.Error(), cudaRef) || !strings.Contains(err.Error(), "hashes to") {
		t.Fatalf("err = %v, want the corrupt blob named", err)
	}
	if n := seedtest.Count(reg.Requests(), layer.String()); n != 3 {
		t.Errorf("the corrupt blob was fetched %d times, want 3 (1 + 2 retries)", n)
	}
	if _, err := os.Stat(filepath.Join(dir, "blobs", "sha256", layer.Hex)); err == nil {
		t.Error("a corrupt blob was left in the layout")
	}
	assertNoPartials(t, dir)
}

// flipWriter changes the first byte of a body.
type flipWriter struct {
	http.ResponseWriter
	done bool
}

func (f *flipWriter) Write(b []byte) (int, error) {
	if !f.done && len(b) > 0 {
		c := append([]byte(nil), b...)
		c[0] ^= 0xff
		f.done = true
		return f.ResponseWriter.Write(c)
	}
	return f.ResponseWriter.Write(b)
}

func TestPullRetriesServerErrors(t *testing.T) {
	reg := seedtest.New(t)
	img := reg.Push(t, "nvidia/cuda", "12.4.1-base-ubuntu22.04", 1024, 1)
	fails := 2
	reg.Wrap = func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		if fails > 0 && strings.Contains(r.URL.Path, "/blobs/") {
			fails--
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	}
	l, _ := seed.OpenLayout(t.TempDir())
	if _, err := l.Pull(context.Background(), cudaRef, seedtest.Digest(t, img), opts(reg)); err != nil {
		t.Fatalf("two 503s then success: %v", err)
	}
	if fails != 0 {
		t.Error("the failures were not hit")
	}
}

func TestPullDigestMismatchNamesImageAndBothDigests(t *testing.T) {
	reg := seedtest.New(t)
	pinnedImg := reg.Push(t, "nvidia/cuda", "12.4.1-base-ubuntu22.04", 512, 1)
	other := reg.Push(t, "nvidia/cuda", "other", 512, 1)
	pinned, served := seedtest.Digest(t, pinnedImg), seedtest.Digest(t, other)
	// The registry answers the pin with another image's manifest.
	reg.Wrap = func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		r.URL.Path = strings.Replace(r.URL.Path, "/manifests/"+pinned, "/manifests/"+served, 1)
		next.ServeHTTP(w, r)
	}
	l, _ := seed.OpenLayout(t.TempDir())
	_, err := l.Pull(context.Background(), cudaRef, pinned, opts(reg))
	var mm *seed.MismatchError
	if !errors.As(err, &mm) {
		t.Fatalf("err = %v, want a *MismatchError", err)
	}
	for _, want := range []string{cudaRef, pinned, served} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not name %s", err, want)
		}
	}
	if n := seedtest.Count(reg.Requests(), "/blobs/"); n != 0 {
		t.Errorf("%d blobs fetched for a mismatched manifest", n)
	}
}

func TestPullRefusals(t *testing.T) {
	l, _ := seed.OpenLayout(t.TempDir())
	d := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct{ ref, digest, want string }{
		{cudaRef, "", "pin it by digest"},
		{"docker.io/library/ubuntu:22.04", d, "registry docker.io is not allowed (allowed: nvcr.io)"},
		{"ubuntu@" + d, "", "must start with a registry host"},
		{"nvcr.io/nvidia/cuda@sha256:abc", "", "not a sha256 digest"},
		{"nvcr.io/nvidia/cuda@" + d, "sha256:" + strings.Repeat("cd", 32), "does not match"},
		{cudaRef, "md5:00", "not a sha256 digest"},
	} {
		_, err := l.Pull(context.Background(), tc.ref, tc.digest, seed.Options{Registry: "127.0.0.1:1", Auth: authn.Anonymous})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.ref) {
			t.Errorf("Pull(%s, %q) = %v, want %q naming the image", tc.ref, tc.digest, err, tc.want)
		}
	}
}

func TestPullTakesThePlatformFromAnIndex(t *testing.T) {
	reg := seedtest.New(t)
	amd, _ := random.Image(700, 2)
	arm, _ := random.Image(700, 2)
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
	)
	reg.WriteIndex(t, "nvidia/pytorch", "24.08-py3", idx)
	ref := "nvcr.io/nvidia/pytorch:24.08-py3"
	dg := seedtest.Digest(t, idx)
	reg.Requests()

	l, _ := seed.OpenLayout(t.TempDir())
	p, err := l.Pull(context.Background(), ref, dg, opts(reg))
	if err != nil {
		t.Fatal(err)
	}
	if p.Digest != dg || p.MediaType != seed.MediaOCIIndex {
		t.Errorf("pulled %s %s, want the index %s", p.Digest, p.MediaType, dg)
	}
	reqs := reg.Requests()
	armDigest := seedtest.Digest(t, arm)
	if seedtest.Count(reqs, armDigest) != 0 || seedtest.Count(reqs, seedtest.Digest(t, amd)) != 1 {
		t.Errorf("requests %+v: want amd64's manifest only", reqs)
	}
	if n := len(p.Blobs); n != 5 {
		t.Errorf("%d blobs, want index, manifest, config and 2 layers", n)
	}

	o := opts(reg)
	o.Platform = "linux/s390x"
	if _, err := l.Pull(context.Background(), ref, dg, o); err == nil || !strings.Contains(err.Error(), "no linux/s390x image") {
		t.Errorf("err = %v, want the missing platform named", err)
	}
}

func TestResolveSendsNGCCredentials(t *testing.T) {
	reg := seedtest.New(t)
	img := reg.Push(t, "nvidia/cuda", "12.4.1-base-ubuntu22.04", 256, 1)
	reg.Requests()
	t.Setenv(seed.APIKeyEnv, "nvapi-secret")
	r, err := seed.Resolve(context.Background(), cudaRef, seed.Options{Registry: reg.Host})
	if err != nil {
		t.Fatal(err)
	}
	if r.Digest != seedtest.Digest(t, img) || r.MediaType == "" || r.Size == 0 {
		t.Errorf("resolved %+v", r)
	}
	want := "Basic " + base64.StdEncoding.EncodeToString([]byte("$oauthtoken:nvapi-secret"))
	sawAuth := false
	for _, q := range reg.Requests() {
		if strings.Contains(q.Path, "/manifests/") {
			sawAuth = true
			if q.Authorization != want {
				t.Errorf("%s %s: Authorization %q, want NGC's $oauthtoken basic auth", q.Method, q.Path, q.Authorization)
			}
		}
	}
	if !sawAuth {
		t.Error("no manifest request seen")
	}

	// Without a key, nothing is sent.
	t.Setenv(seed.APIKeyEnv, "")
	if _, err := seed.Resolve(context.Background(), cudaRef, seed.Options{Registry: reg.Host}); err != nil {
		t.Fatal(err)
	}
	for _, q := range reg.Requests() {
		if q.Authorization != "" {
			t.Errorf("anonymous request carried %q", q.Authorization)
		}
	}
}

func TestResolveErrorsKeepTheKeySecret(t *testing.T) {
	reg := seedtest.New(t)
	reg.Wrap = func(w http.ResponseWriter, r *http.Request, next http.Handler) {
		http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"bad key"}]}`, http.StatusUnauthorized)
	}
	t.Setenv(seed.APIKeyEnv, "nvapi-secret")
	_, err := seed.Resolve(context.Background(), cudaRef, seed.Options{Registry: reg.Host})
	if err == nil || !strings.Contains(err.Error(), cudaRef) {
		t.Fatalf("err = %v, want the image named", err)
	}
	if strings.Contains(err.Error(), "nvapi-secret") || strings.Contains(err.Error(), base64.StdEncoding.EncodeToString([]byte("$oauthtoken:nvapi-secret"))) {
		t.Errorf("the error leaks the key: %v", err)
	}
}

func TestResolveDigestRefChecksTheRegistry(t *testing.T) {
	reg := seedtest.New(t)
	img := reg.Push(t, "nvidia/cuda", "12.4.1-base-ubuntu22.04", 256, 1)
	dg := seedtest.Digest(t, img)
	r, err := seed.Resolve(context.Background(), "nvcr.io/nvidia/cuda@"+dg, opts(reg))
	if err != nil || r.Digest != dg {
		t.Fatalf("Resolve = %+v, %v", r, err)
	}
	if _, err := seed.Resolve(context.Background(), "nvcr.io/nvidia/cuda", opts(reg)); err == nil || !strings.Contains(err.Error(), "name a tag or a digest") {
		t.Errorf("err = %v", err)
	}
}

func TestIndexJSONRefusesDuplicates(t *testing.T) {
	p := &seed.Pulled{Ref: cudaRef, Digest: "sha256:" + strings.Repeat("ab", 32)}
	if _, err := seed.IndexJSON([]*seed.Pulled{p, p}); err == nil || !strings.Contains(err.Error(), "listed twice") {
		t.Errorf("err = %v", err)
	}
}

func TestUniqueBlobs(t *testing.T) {
	a := &seed.Pulled{Blobs: []seed.Blob{{Digest: "x"}, {Digest: "shared"}}}
	b := &seed.Pulled{Blobs: []seed.Blob{{Digest: "shared"}, {Digest: "y"}}}
	var got []string
	for _, bl := range seed.UniqueBlobs([]*seed.Pulled{a, b}) {
		got = append(got, bl.Digest)
	}
	if strings.Join(got, ",") != "x,shared,y" {
		t.Errorf("UniqueBlobs = %v", got)
	}
}

func validateBlob(dir string, h v1.Hash) error {
	f, err := os.Open(filepath.Join(dir, "blobs", "sha256", h.Hex))
	if err != nil {
		return err
	}
	defer f.Close()
	got, _, err := v1.SHA256(f)
	if err != nil {
		return err
	}
	if got != h {
		return errors.New("blob " + h.String() + " hashes to " + got.String())
	}
	return nil
}

func assertNoPartials(t *testing.T, dir string) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "blobs", "sha256"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("partial file %s left in the layout", e.Name())
		}
	}
}

// TestPullTracksEachBlob: Track sees every fetched blob's stream, with its
// size, and the bytes read through it are the blob's.
func TestPullTracksEachBlob(t *testing.T) {
	reg := seedtest.New(t)
	img := reg.Push(t, "nvidia/cuda", "12.4.1-base-ubuntu22.04", 256<<10, 2)
	dg := seedtest.Digest(t, img)
	o := opts(reg)
	sizes := map[string]int64{}
	read := map[string]*countingReader{}
	o.Track = func(ref, digest string, done, total int64, body io.ReadCloser) io.ReadCloser {
		if ref != cudaRef || done != 0 {
			t.Errorf("track %s %s from %d", ref, digest, done)
		}
		sizes[digest] = total
		c := &countingReader{ReadCloser: body}
		read[digest] = c
		return c
	}
	l, _ := seed.OpenLayout(t.TempDir())
	pl, err := l.Pull(context.Background(), cudaRef, dg, o)
	if err != nil {
		t.Fatal(err)
	}
	// The config and both layers stream through the tracker; the manifest,
	// fetched and checked whole against the pin, does not.
	if len(sizes) != 3 || len(pl.Blobs) != 4 {
		t.Fatalf("tracked %d blobs of the %d pulled, want the config and 2 layers", len(sizes), len(pl.Blobs))
	}
	for _, b := range pl.Blobs {
		c, ok := read[b.Digest]
		if !ok {
			continue
		}
		if sizes[b.Digest] != b.Size || c.n != b.Size {
			t.Errorf("blob %s: size %d, tracked total %d, read through the tracker %d", b.Digest, b.Size, sizes[b.Digest], c.n)
		}
	}
}

type countingReader struct {
	io.ReadCloser
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n += int64(n)
	return n, err
}
