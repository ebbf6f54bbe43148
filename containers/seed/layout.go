package seed

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Annotations written on each image's entry in index.json. containerd's
// importer names the image after io.containerd.image.name; other OCI tools
// read org.opencontainers.image.ref.name. Both carry the full reference.
const (
	AnnotationRefName        = "org.opencontainers.image.ref.name"
	AnnotationContainerdName = "io.containerd.image.name"
)

// Media types this package reads and writes.
const (
	MediaOCIIndex      = "application/vnd.oci.image.index.v1+json"
	MediaOCIManifest   = "application/vnd.oci.image.manifest.v1+json"
	MediaDockerList    = "application/vnd.docker.distribution.manifest.list.v2+json"
	MediaDockerImageV2 = "application/vnd.docker.distribution.manifest.v2+json"
)

// layoutFile is the content of the oci-layout file.
const layoutFile = `{"imageLayoutVersion":"1.0.0"}` + "\n"

// Layout is an OCI image layout directory: oci-layout, index.json and
// blobs/sha256. Blobs are shared between the images in it.
type Layout struct {
	dir string
}

// OpenLayout makes dir an OCI image layout if it is not one yet and returns
// it. Blobs already there are kept: they are the cache.
func OpenLayout(dir string) (*Layout, error) {
	if err := os.MkdirAll(filepath.Join(dir, "blobs", "sha256"), 0o755); err != nil {
		return nil, fmt.Errorf("opening layout %s: %w", dir, err)
	}
	p := filepath.Join(dir, "oci-layout")
	if _, err := os.Stat(p); os.IsNotExist(err) {
		if err := writeAtomic(p, []byte(layoutFile)); err != nil {
			return nil, fmt.Errorf("opening layout %s: %w", dir, err)
		}
	}
	return &Layout{dir: dir}, nil
}

// Dir returns the layout's directory.
func (l *Layout) Dir() string { return l.dir }

// BlobPath returns where a blob of the given digest lives (sha256:<hex>).
func (l *Layout) BlobPath(digest string) string {
	return filepath.Join(l.dir, "blobs", "sha256", strings.TrimPrefix(digest, "sha256:"))
}

// Blob is one content-addressed file of an image.
type Blob struct {
	Digest string
	Size   int64
}

// Pulled is one image in the layout.
type Pulled struct {
	// Ref is the reference as configured; it names the image in index.json.
	Ref string
	// Digest, MediaType and Size describe the pinned manifest (or index).
	Digest    string
	MediaType string
	Size      int64
	// Blobs lists every blob the image needs in the layout, the pinned
	// manifest first; the order is the order of download.
	Blobs []Blob
	// Fetched and Cached count bytes downloaded and bytes found in place.
	Fetched int64
	Cached  int64
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *platform         `json:"platform,omitempty"`
}

type platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Variant      string `json:"variant,omitempty"`
}

type index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType,omitempty"`
	Manifests     []descriptor `json:"manifests"`
}

// IndexJSON returns the index.json of a layout holding images, one entry
// each, named by both annotations, in the order given. The same reference
// twice is an error: containerd would keep only one.
func IndexJSON(images []*Pulled) ([]byte, error) {
	idx := index{SchemaVersion: 2, MediaType: MediaOCIIndex, Manifests: []descriptor{}}
	var seen []string
	for _, p := range images {
		if slices.Contains(seen, p.Ref) {
			return nil, fmt.Errorf("image %s is listed twice", p.Ref)
		}
		seen = append(seen, p.Ref)
		idx.Manifests = append(idx.Manifests, descriptor{
			MediaType: p.MediaType,
			Digest:    p.Digest,
			Size:      p.Size,
			Annotations: map[string]string{
				AnnotationRefName:        p.Ref,
				AnnotationContainerdName: p.Ref,
			},
		})
	}
	b, err := json.MarshalIndent(idx, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// LayoutFile returns the content of an OCI layout's oci-layout file.
func LayoutFile() []byte { return []byte(layoutFile) }

// WriteIndex replaces the layout's index.json with one listing images.
func (l *Layout) WriteIndex(images []*Pulled) error {
	b, err := IndexJSON(images)
	if err != nil {
		return err
	}
	if err := writeAtomic(filepath.Join(l.dir, "index.json"), b); err != nil {
		return fmt.Errorf("writing %s: %w", filepath.Join(l.dir, "index.json"), err)
	}
	return nil
}

// UniqueBlobs returns the blobs of images with repeats (layers shared
// between bases) removed, in first-seen order.
func UniqueBlobs(images []*Pulled) []Blob {
	var out []Blob
	seen := map[string]bool{}
	for _, p := range images {
		for _, b := range p.Blobs {
			if !seen[b.Digest] {
				seen[b.Digest] = true
				out = append(out, b)
			}
		}
	}
	return out
}

// writeAtomic writes data to a temporary file beside p and renames it over
// p, so that a reader sees the old file or the new one, never half of one.
func writeAtomic(p string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(p), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), p)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}
