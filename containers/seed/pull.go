package seed

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/gpuhost/gpuhost/facts/sysroot"
)

const (
	// maxManifest bounds a manifest or index: real ones are a few KiB.
	maxManifest = 4 << 20
	// maxLayers bounds the blobs one manifest may list.
	maxLayers = 1000
	// maxBlob bounds one blob's declared size.
	maxBlob = 256 << 30
	// copyBuffer is the buffer blobs stream through; large enough that
	// syscalls are not the cost, small enough that memory stays flat.
	copyBuffer = 32 << 10
)

// retryable marks a blob failure worth another try.
type retryable struct{ err error }

func (r retryable) Error() string { return r.err.Error() }
func (r retryable) Unwrap() error { return r.err }

// Pull fetches the image pinned by img's digest into the layout and returns
// what it holds. It refuses a reference without a digest and a registry that
// is not allowed, and fails when the manifest the registry serves does not
// hash to the pin (a *MismatchError) or when any blob does not hash to the
// digest its manifest names. Blobs already in the layout are not fetched
// again. Pull does not touch index.json; WriteIndex does.
func (l *Layout) Pull(ctx context.Context, ref, pinned string, o Options) (*Pulled, error) {
	t, err := parseRef(ref, &o)
	if err != nil {
		return nil, err
	}
	if pinned == "" {
		pinned = t.digest
	}
	if pinned == "" {
		return nil, fmt.Errorf("image %s: pin it by digest (ref@sha256:... or a digest field); a tag alone is refused", ref)
	}
	if !digestRe.MatchString(pinned) {
		return nil, fmt.Errorf("image %s: %q is not a sha256 digest", ref, pinned)
	}
	if t.digest != "" && t.digest != pinned {
		return nil, fmt.Errorf("image %s: the digest %s does not match the one in the reference", ref, pinned)
	}
	base := o.Transport
	if base == nil {
		base = remote.DefaultTransport
	}
	rt, err := transport.NewWithContext(ctx, t.repo.Registry, o.auth(), base, []string{t.repo.Scope(transport.PullScope)})
	if err != nil {
		return nil, fmt.Errorf("image %s: connecting to %s: %w", ref, t.repo.RegistryStr(), err)
	}
	pl := &puller{l: l, o: &o, t: t, client: &http.Client{Transport: rt}}
	return pl.pull(ctx, pinned)
}

type puller struct {
	l      *Layout
	o      *Options
	t      target
	client *http.Client
	out    Pulled
}

func (p *puller) pull(ctx context.Context, pinned string) (*Pulled, error) {
	p.out = Pulled{Ref: p.t.ref, Digest: pinned}
	body, mt, err := p.manifest(ctx, pinned)
	if err != nil {
		return nil, err
	}
	p.out.MediaType, p.out.Size = mt, int64(len(body))
	switch mt {
	case MediaOCIIndex, MediaDockerList:
		child, err := p.pick(body)
		if err != nil {
			return nil, err
		}
		cbody, cmt, err := p.manifest(ctx, child.Digest)
		if err != nil {
			return nil, err
		}
		if err := p.image(ctx, cbody, cmt); err != nil {
			return nil, err
		}
	case MediaOCIManifest, MediaDockerImageV2:
		if err := p.image(ctx, body, mt); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("image %s: manifest %s has media type %q, which is not an OCI or Docker v2 image or index", p.t.ref, pinned, mt)
	}
	return &p.out, nil
}

// manifest fetches a manifest by digest, checks its hash and stores it.
func (p *puller) manifest(ctx context.Context, digest string) ([]byte, string, error) {
	if body, mt, ok := p.cachedManifest(digest); ok {
		return body, mt, nil
	}
	u := p.url("manifests", digest)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Accept", strings.Join([]string{MediaOCIIndex, MediaOCIManifest, MediaDockerList, MediaDockerImageV2}, ", "))
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, "", fmt.Errorf("image %s: fetching manifest %s: %w", p.t.ref, digest, err)
	}
	defer resp.Body.Close()
	if err := transport.CheckError(resp, http.StatusOK); err != nil {
		return nil, "", fmt.Errorf("image %s: fetching manifest %s: %w", p.t.ref, digest, err)
	}
	body, err := sysroot.ReadAllLimit(resp.Body, maxManifest, "manifest "+digest)
	if errors.Is(err, sysroot.ErrTooLarge) {
		return nil, "", fmt.Errorf("image %s: manifest %s is larger than %d bytes", p.t.ref, digest, maxManifest)
	}
	if err != nil {
		return nil, "", fmt.Errorf("image %s: fetching manifest %s: %w", p.t.ref, digest, err)
	}
	if got := sha256Hex(body); got != digest {
		return nil, "", &MismatchError{Ref: p.t.ref, Pinned: digest, Got: got}
	}
	mt, err := mediaType(body, resp.Header.Get("Content-Type"))
	if err != nil {
		return nil, "", fmt.Errorf("image %s: manifest %s: %w", p.t.ref, digest, err)
	}
	if err := writeAtomic(p.l.BlobPath(digest), body); err != nil {
		return nil, "", fmt.Errorf("image %s: storing manifest %s: %w", p.t.ref, digest, err)
	}
	p.out.Blobs = append(p.out.Blobs, Blob{Digest: digest, Size: int64(len(body))})
	p.out.Fetched += int64(len(body))
	return body, mt, nil
}

// cachedManifest returns a manifest already in the layout, when it is
// there, small enough and still hashes to its digest.
func (p *puller) cachedManifest(digest string) ([]byte, string, bool) {
	name := p.l.BlobPath(digest)
	fi, err := os.Stat(name)
	if err != nil || !fi.Mode().IsRegular() || fi.Size() > maxManifest {
		return nil, "", false
	}
	body, err := os.ReadFile(name)
	if err != nil || sha256Hex(body) != digest {
		return nil, "", false
	}
	mt, err := mediaType(body, "")
	if err != nil {
		return nil, "", false
	}
	p.out.Blobs = append(p.out.Blobs, Blob{Digest: digest, Size: int64(len(body))})
	p.out.Cached += int64(len(body))
	return body, mt, true
}

// mediaType takes the media type from the document, where OCI and Docker v2
// both put it, and falls back to the response's Content-Type.
func mediaType(body []byte, header string) (string, error) {
	var m struct {
		SchemaVersion int    `json:"schemaVersion"`
		MediaType     string `json:"mediaType"`
		Manifests     []any  `json:"manifests"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return "", fmt.Errorf("not JSON: %w", err)
	}
	if m.SchemaVersion != 2 {
		return "", fmt.Errorf("schemaVersion %d is not 2", m.SchemaVersion)
	}
	switch {
	case m.MediaType != "":
		return m.MediaType, nil
	case header != "":
		mt, _, _ := strings.Cut(header, ";")
		return strings.TrimSpace(mt), nil
	case m.Manifests != nil:
		return MediaOCIIndex, nil
	default:
		return MediaOCIManifest, nil
	}
}

// pick chooses the index entry for the configured platform.
func (p *puller) pick(body []byte) (descriptor, error) {
	var idx index
	if err := json.Unmarshal(body, &idx); err != nil {
		return descriptor{}, fmt.Errorf("image %s: index: %w", p.t.ref, err)
	}
	want := p.o.Platform
	if want == "" {
		want = DefaultPlatform
	}
	wp, err := v1.ParsePlatform(want)
	if err != nil {
		return descriptor{}, fmt.Errorf("platform %q: %w", want, err)
	}
	var seen []string
	for i, d := range idx.Manifests {
		if i >= maxLayers {
			break
		}
		if d.Platform == nil {
			continue
		}
		got := v1.Platform{OS: d.Platform.OS, Architecture: d.Platform.Architecture, Variant: d.Platform.Variant}
		seen = append(seen, got.String())
		if got.Satisfies(*wp) && digestRe.MatchString(d.Digest) {
			return d, nil
		}
	}
	return descriptor{}, fmt.Errorf("image %s: the index has no %s image (it has: %s)", p.t.ref, want, strings.Join(seen, ", "))
}

// image fetches the config and layers an image manifest lists.
func (p *puller) image(ctx context.Context, body []byte, mt string) error {
	var m struct {
		Config descriptor   `json:"config"`
		Layers []descriptor `json:"layers"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return fmt.Errorf("image %s: manifest: %w", p.t.ref, err)
	}
	if len(m.Layers) > maxLayers {
		return fmt.Errorf("image %s: the manifest lists %d layers, more than %d", p.t.ref, len(m.Layers), maxLayers)
	}
	for _, d := range append([]descriptor{m.Config}, m.Layers...) {
		if !digestRe.MatchString(d.Digest) {
			return fmt.Errorf("image %s: %s manifest names blob %q, which is not a sha256 digest", p.t.ref, mt, d.Digest)
		}
		if d.Size < 0 || d.Size > maxBlob {
			return fmt.Errorf("image %s: blob %s has size %d", p.t.ref, d.Digest, d.Size)
		}
		if err := p.blob(ctx, d); err != nil {
			return err
		}
		p.out.Blobs = append(p.out.Blobs, Blob{Digest: d.Digest, Size: d.Size})
	}
	return nil
}

// blob makes sure one blob is in the layout, fetching it with retries when
// it is not. Blobs are renamed into place unsynced (an fsync per blob
// halves the throughput), so one found in place is hashed again before it
// is trusted: after a crash it may be the right size and the wrong bytes.
func (p *puller) blob(ctx context.Context, d descriptor) error {
	dst := p.l.BlobPath(d.Digest)
	if ok, err := verified(dst, d); err != nil {
		return fmt.Errorf("image %s: blob %s in the cache: %w", p.t.ref, d.Digest, err)
	} else if ok {
		p.out.Cached += d.Size
		p.report(Progress{Ref: p.t.ref, Digest: d.Digest, Done: d.Size, Total: d.Size, Cached: true, Complete: true})
		return nil
	}
	f, err := os.CreateTemp(p.l.dir+"/blobs/sha256", ".partial-*")
	if err != nil {
		return fmt.Errorf("image %s: blob %s: %w", p.t.ref, d.Digest, err)
	}
	closed := false
	defer func() {
		// Whatever happened, no partial file outlives the attempt.
		if !closed {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	dl := &download{p: p, d: d, f: f, h: sha256.New()}
	retries := p.o.Retries
	if retries == 0 {
		retries = 4
	}
	wait := p.o.Backoff
	if wait <= 0 {
		wait = time.Second
	}
	for attempt := 0; ; attempt++ {
		err = dl.fetch(ctx)
		if err == nil {
			break
		}
		var r retryable
		if !errors.As(err, &r) || attempt >= retries || ctx.Err() != nil {
			return err
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return ctx.Err()
		}
		wait = min(wait*2, 30*time.Second)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("image %s: blob %s: %w", p.t.ref, d.Digest, err)
	}
	closed = true
	err = f.Close()
	if err == nil {
		err = os.Rename(f.Name(), dst)
	}
	if err != nil {
		os.Remove(f.Name())
		return fmt.Errorf("image %s: blob %s: %w", p.t.ref, d.Digest, err)
	}
	p.out.Fetched += d.Size
	return nil
}

func (p *puller) report(pr Progress) {
	if p.o.Progress != nil {
		p.o.Progress(pr)
	}
}

func (p *puller) url(kind, digest string) string {
	return fmt.Sprintf("%s://%s/v2/%s/%s/%s", p.t.repo.Scheme(), p.t.repo.RegistryStr(), p.t.repo.RepositoryStr(), kind, digest)
}

// download is one blob's transfer, kept across attempts so that a retry
// resumes where the last one stopped when the registry honours Range.
type download struct {
	p    *puller
	d    descriptor
	f    *os.File
	h    hash.Hash
	done int64
	next int64
}

func (dl *download) fetch(ctx context.Context) error {
	ref, dg := dl.p.t.ref, dl.d.Digest
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, dl.p.url("blobs", dg), nil)
	if err != nil {
		return err
	}
	if dl.done > 0 {
		// The end is explicit: some registries refuse an open range.
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", dl.done, dl.d.Size-1))
	}
	resp, err := dl.p.client.Do(req)
	if err != nil {
		return retryable{fmt.Errorf("image %s: fetching blob %s: %w", ref, dg, err)}
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusPartialContent && dl.done > 0:
	case resp.StatusCode == http.StatusOK:
		// A registry that ignores Range sends it all again: start over.
		// (Only then: truncating a file makes ext4 flush it on close.)
		if dl.done > 0 {
			if err := dl.reset(); err != nil {
				return err
			}
		}
	default:
		err := fmt.Errorf("image %s: fetching blob %s: %w", ref, dg, transport.CheckError(resp, http.StatusOK))
		if resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout {
			return retryable{err}
		}
		return err
	}
	// The file's ReadFrom copies with its own buffer; the tee hashes each
	// chunk as it passes, while it is still in cache.
	body := resp.Body
	if dl.p.o.Track != nil {
		body = dl.p.o.Track(ref, dg, dl.done, dl.d.Size, body)
		defer body.Close()
	}
	src := io.TeeReader(io.LimitReader(body, dl.d.Size-dl.done+1), dl)
	if _, err := io.Copy(fileWriter{dl.f}, src); err != nil {
		var werr writeError
		if errors.As(err, &werr) {
			return fmt.Errorf("image %s: writing blob %s: %w", ref, dg, werr.err)
		}
		return retryable{fmt.Errorf("image %s: fetching blob %s: %w", ref, dg, err)}
	}
	if dl.done != dl.d.Size {
		err := fmt.Errorf("image %s: blob %s: got %d bytes, the manifest says %d", ref, dg, dl.done, dl.d.Size)
		if dl.done > dl.d.Size {
			_ = dl.reset()
		}
		return retryable{err}
	}
	if got := "sha256:" + hex.EncodeToString(dl.h.Sum(nil)); got != dg {
		_ = dl.reset()
		return retryable{fmt.Errorf("image %s: blob %s: the content hashes to %s", ref, dg, got)}
	}
	dl.p.report(Progress{Ref: ref, Digest: dg, Done: dl.done, Total: dl.d.Size, Complete: true})
	return nil
}

// Write hashes and counts what passes to the file and reports progress.
func (dl *download) Write(b []byte) (int, error) {
	dl.h.Write(b)
	dl.done += int64(len(b))
	if dl.done >= dl.next {
		dl.p.report(Progress{Ref: dl.p.t.ref, Digest: dl.d.Digest, Done: dl.done, Total: dl.d.Size})
		dl.next = dl.done + ProgressEvery
	}
	return len(b), nil
}

// fileWriter tells write errors (the disk) from read errors (the network,
// worth a retry).
type fileWriter struct{ f *os.File }

type writeError struct{ err error }

func (w writeError) Error() string { return w.err.Error() }

func (w fileWriter) Write(b []byte) (int, error) {
	n, err := w.f.Write(b)
	if err != nil {
		return n, writeError{err}
	}
	return n, nil
}

// reset discards what an attempt wrote.
func (dl *download) reset() error {
	if err := dl.f.Truncate(0); err != nil {
		return err
	}
	if _, err := dl.f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	dl.h.Reset()
	dl.done, dl.next = 0, 0
	return nil
}

// verified reports whether the file at p holds exactly d; a file that does
// not is removed so that it is fetched again.
func verified(p string, d descriptor) (bool, error) {
	f, err := os.Open(p)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return false, err
	}
	if fi.Mode().IsRegular() && fi.Size() == d.Size {
		h := sha256.New()
		if _, err := io.CopyBuffer(h, f, make([]byte, copyBuffer)); err != nil {
			return false, err
		}
		if "sha256:"+hex.EncodeToString(h.Sum(nil)) == d.Digest {
			return true, nil
		}
	}
	return false, os.Remove(p)
}

func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}
