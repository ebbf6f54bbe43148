package trivy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"path"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/partial"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

const (
	// maxSeededManifest bounds an index, manifest or config blob read
	// whole; real ones are a few KiB.
	maxSeededManifest = 4 << 20
	// maxSeededLayer bounds one layer blob streamed out of the layout.
	maxSeededLayer = 64 << 30
)

// targetLayout reads images out of an OCI image layout inside a scanned
// target, through the target's own view: go-containerregistry's layout
// package opens blobs by host path, which would follow a link the target
// planted out of it. Every blob is checked against its digest as it is
// read.
type targetLayout struct {
	fsys sysroot.FS
	dir  string // the layout's directory inside the target
	// ctx ends the reading of layer blobs: one entry of a layer can be
	// gigabytes, and the scan's deadline must hold inside it too. Nil
	// reads to the end.
	ctx context.Context
}

func (l targetLayout) blobPath(h v1.Hash) string {
	return l.dir + "/blobs/" + h.Algorithm + "/" + h.Hex
}

// small reads a manifest, index or config blob and checks its digest.
func (l targetLayout) small(h v1.Hash) ([]byte, error) {
	if h.Algorithm != "sha256" {
		return nil, fmt.Errorf("blob %s: only sha256 digests are read", h)
	}
	data, err := l.fsys.ReadFileLimit(l.blobPath(h), maxSeededManifest)
	if err != nil {
		return nil, fmt.Errorf("reading blob %s: %w", h, err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != h.Hex {
		return nil, fmt.Errorf("blob %s does not hash to its digest", h)
	}
	return data, nil
}

// image opens the image a layout index entry names: a manifest, or an
// index from which the linux image for this machine's architecture is
// taken, as a container runtime here would run it.
func (l targetLayout) image(digest string) (v1.Image, error) {
	h, err := v1.NewHash(digest)
	if err != nil {
		return nil, fmt.Errorf("image digest %q: %w", digest, err)
	}
	for depth := 0; depth < 3; depth++ {
		raw, err := l.small(h)
		if err != nil {
			return nil, err
		}
		var probe struct {
			MediaType types.MediaType `json:"mediaType"`
			Manifests []any           `json:"manifests"`
		}
		if err := json.Unmarshal(raw, &probe); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", h, err)
		}
		if !probe.MediaType.IsIndex() && probe.Manifests == nil {
			return l.manifestImage(raw)
		}
		idx, err := v1.ParseIndexManifest(bytes.NewReader(raw))
		if err != nil {
			return nil, fmt.Errorf("parsing index %s: %w", h, err)
		}
		next, ok := platformChild(idx)
		if !ok {
			return nil, fmt.Errorf("index %s has no linux/%s image", h, runtime.GOARCH)
		}
		h = next
	}
	return nil, fmt.Errorf("image %s: indexes nested too deep", digest)
}

// platformChild picks the linux manifest for this architecture, or a
// nested index to descend into.
func platformChild(idx *v1.IndexManifest) (v1.Hash, bool) {
	for _, d := range idx.Manifests {
		if d.MediaType.IsIndex() {
			return d.Digest, true
		}
		if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == runtime.GOARCH {
			return d.Digest, true
		}
	}
	return v1.Hash{}, false
}

// manifestImage is the image of a manifest already read and checked.
func (l targetLayout) manifestImage(raw []byte) (v1.Image, error) {
	m, err := v1.ParseManifest(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parsing manifest: %w", err)
	}
	if len(m.Layers) > maxBlobsPerImage {
		return nil, fmt.Errorf("manifest lists %d layers, more than %d", len(m.Layers), maxBlobsPerImage)
	}
	return partial.CompressedToImage(&seededImage{layout: l, raw: raw, manifest: m})
}

// maxBlobsPerImage bounds the layers of one image.
const maxBlobsPerImage = 1024

// seededImage is partial.CompressedImageCore over a seeded layout.
type seededImage struct {
	layout   targetLayout
	raw      []byte
	manifest *v1.Manifest
}

func (i *seededImage) RawManifest() ([]byte, error) { return i.raw, nil }

func (i *seededImage) MediaType() (types.MediaType, error) {
	if i.manifest.MediaType != "" {
		return i.manifest.MediaType, nil
	}
	return types.OCIManifestSchema1, nil
}

func (i *seededImage) RawConfigFile() ([]byte, error) {
	return i.layout.small(i.manifest.Config.Digest)
}

func (i *seededImage) LayerByDigest(h v1.Hash) (partial.CompressedLayer, error) {
	for _, d := range i.manifest.Layers {
		if d.Digest == h {
			return &seededLayer{layout: i.layout, desc: d}, nil
		}
	}
	return nil, fmt.Errorf("layer %s is not in the manifest", h)
}

// seededLayer is one layer blob, streamed and checked against its digest
// and size as it is read.
type seededLayer struct {
	layout targetLayout
	desc   v1.Descriptor
}

func (l *seededLayer) Digest() (v1.Hash, error)            { return l.desc.Digest, nil }
func (l *seededLayer) Size() (int64, error)                { return l.desc.Size, nil }
func (l *seededLayer) MediaType() (types.MediaType, error) { return l.desc.MediaType, nil }

func (l *seededLayer) Compressed() (io.ReadCloser, error) {
	if l.desc.Digest.Algorithm != "sha256" {
		return nil, fmt.Errorf("layer %s: only sha256 digests are read", l.desc.Digest)
	}
	if l.desc.Size < 0 || l.desc.Size > maxSeededLayer {
		return nil, fmt.Errorf("layer %s: size %d out of bounds", l.desc.Digest, l.desc.Size)
	}
	rc, err := l.layout.fsys.Stream(l.layout.blobPath(l.desc.Digest), l.desc.Size)
	if err != nil {
		return nil, fmt.Errorf("reading layer %s: %w", l.desc.Digest, err)
	}
	return &checkedReader{ctx: l.layout.ctx, rc: rc, h: sha256.New(), want: l.desc.Digest.Hex, left: l.desc.Size}, nil
}

// errLayerDigest says a layer's bytes are not the ones its digest names.
var errLayerDigest = errors.New("layer does not hash to its digest")

// checkedReader fails the read that reaches the end of a blob whose bytes
// do not hash to its digest, or whose length is not the manifest's.
type checkedReader struct {
	ctx  context.Context
	rc   io.ReadCloser
	h    hash.Hash
	want string
	left int64
}

func (r *checkedReader) Read(p []byte) (int, error) {
	if r.ctx != nil {
		if err := r.ctx.Err(); err != nil {
			return 0, fmt.Errorf("reading layer sha256:%s: %w", r.want, err)
		}
	}
	n, err := r.rc.Read(p)
	r.h.Write(p[:n])
	r.left -= int64(n)
	if errors.Is(err, io.EOF) && (r.left != 0 || hex.EncodeToString(r.h.Sum(nil)) != r.want) {
		return n, fmt.Errorf("%w (sha256:%s)", errLayerDigest, r.want)
	}
	return n, err
}

func (r *checkedReader) Close() error { return r.rc.Close() }

// seededImages matches each base the containers collector found whole
// against the DB. An image that cannot be matched carries its error; when
// the bases could not be listed at all, the second result says why.
func (c vulnCollector) seededImages(ctx context.Context, env *collect.Env, f *facts.Facts) ([]facts.ImageVulnerabilities, string) {
	if st, ran := f.Collectors["containers"]; !ran || st.Status != facts.StatusOK || f.Containers == nil {
		if !ran {
			return nil, "the pre-seeded container images were not listed: the containers collector did not run"
		}
		return nil, fmt.Sprintf("the pre-seeded container images were not listed: the containers collector is %s: %s", st.Status, st.Reason)
	}
	var out []facts.ImageVulnerabilities
	for _, ci := range f.Containers.Images {
		dir, err := seededDir(ci.Source)
		iv := facts.ImageVulnerabilities{Ref: ci.Ref, Digest: ci.Digest, Findings: []facts.Finding{}}
		if err == nil {
			err = c.matchImage(ctx, targetLayout{fsys: env.FS, dir: dir, ctx: ctx}, &iv)
		}
		if err != nil {
			iv.Error = err.Error()
		}
		out = append(out, iv)
	}
	return out, ""
}

// seededDir is the layout directory a containers fact names; only
// absolute paths inside the target are read.
func seededDir(source string) (string, error) {
	if !path.IsAbs(source) || path.Clean(source) != source {
		return "", fmt.Errorf("the image's layout %q is not an absolute path in the target", source)
	}
	return source, nil
}

func (c vulnCollector) matchImage(ctx context.Context, l targetLayout, iv *facts.ImageVulnerabilities) error {
	img, err := l.image(iv.Digest)
	if err != nil {
		return fmt.Errorf("opening %s: %w", iv.Digest, err)
	}
	inv, err := imageInventory(ctx, img, iv.Ref)
	if err != nil {
		return err
	}
	iv.OS = strings.TrimSpace(string(inv.os.Family) + " " + inv.os.Name)
	v, err := matchInventory(ctx, inv, c.dbDir)
	if err != nil {
		return err
	}
	iv.Findings = v.Findings
	return nil
}
