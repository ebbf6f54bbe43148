// Package publish pushes a disk image to an OCI registry as an OCI 1.1
// artifact and attaches its evidence (scan report, baked manifest, SBOM) as
// referrers whose subject is the disk image's manifest. Registries without
// the referrers API get the referrers tag schema (sha256-<digest>), which
// go-containerregistry maintains on push and reads back on Referrers.
package publish

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Artifact and media types gpuhost publishes.
const (
	// ArtifactTypeDiskImage is the artifactType of the disk image manifest.
	ArtifactTypeDiskImage = "application/vnd.gpuhost.disk-image.v1"
	// MediaTypeQCOW2 and MediaTypeRaw are the media types of the disk layer.
	MediaTypeQCOW2 = "application/vnd.gpuhost.disk-image.layer.v1.qcow2"
	MediaTypeRaw   = "application/vnd.gpuhost.disk-image.layer.v1.raw"
	// ArtifactTypeReport is a gpuhost.report/v1 JSON document.
	ArtifactTypeReport = "application/vnd.gpuhost.report.v1+json"
	// ArtifactTypeManifest is the baked gpuhost.manifest/v1 document.
	ArtifactTypeManifest = "application/vnd.gpuhost.manifest.v1+json"
	// ArtifactTypeSBOM is a CycloneDX JSON SBOM.
	ArtifactTypeSBOM = "application/vnd.cyclonedx+json"
	// ArtifactTypeVEX is an OpenVEX document: the CVEs waivers accepted.
	ArtifactTypeVEX = "application/vnd.openvex+json"

	// annotationTitle names a layer's file, as ORAS and other clients do.
	annotationTitle = "org.opencontainers.image.title"
)

// emptyConfig is the content of the OCI 1.1 empty descriptor: an artifact
// has no config of its own.
var emptyConfig = []byte("{}")

// maxEvidence bounds one evidence document: they travel in memory.
const maxEvidence = 64 << 20

// Evidence is a document attached to the disk image as a referrer.
type Evidence struct {
	// ArtifactType is the referrer manifest's artifactType.
	ArtifactType string
	// MediaType is the media type of Data's layer; ArtifactType when empty.
	MediaType string
	// Data is the document.
	Data []byte
	// Annotations go on the referrer manifest.
	Annotations map[string]string
}

// Pushed is one manifest written to the registry.
type Pushed struct {
	ArtifactType string `json:"artifact_type"`
	Digest       string `json:"digest"`
	Size         int64  `json:"size"`
}

// Result is what Push wrote.
type Result struct {
	// Ref is the tag or digest reference pushed to, as given.
	Ref string `json:"ref"`
	// Image is the disk image manifest; Ref's repository @ Image.Digest
	// pins it.
	Image Pushed `json:"image"`
	// DiskDigest is the digest of the disk layer, the file itself.
	DiskDigest string `json:"disk_digest"`
	// Referrers are the evidence manifests, in the order given.
	Referrers []Pushed `json:"referrers"`
}

// Publisher pushes disk images with their evidence.
type Publisher interface {
	// Push uploads disk (a .qcow2, .raw or .img file, streamed from disk)
	// as the single layer of an artifact manifest tagged ref, then one
	// referrer per evidence document. It returns what it wrote, or the
	// first error.
	Push(ctx context.Context, ref string, disk string, evidence []Evidence) (Result, error)
}

// Option configures a Publisher or Referrers.
type Option func(*options)

type options struct {
	auth      authn.Authenticator
	transport http.RoundTripper
	insecure  bool
	beforeTag BeforeTag
}

// BeforeTag runs once the disk image and its referrers are in the
// registry, before the tag is set: res holds what was pushed so far.
type BeforeTag func(ctx context.Context, image name.Digest, res Result) error

// WithBeforeTag runs f before the tag is pushed; an error stops the push
// with no tag set. The gate signs there, so that no tag ever names an
// image without its signature and provenance.
func WithBeforeTag(f BeforeTag) Option { return func(o *options) { o.beforeTag = f } }

// WithBasicAuth authenticates with a user name and password (or token).
func WithBasicAuth(username, password string) Option {
	return func(o *options) {
		o.auth = authn.FromConfig(authn.AuthConfig{Username: username, Password: password})
	}
}

// WithTransport replaces the HTTP transport.
func WithTransport(t http.RoundTripper) Option { return func(o *options) { o.transport = t } }

// WithInsecure allows plain HTTP to a registry that is not on a loopback or
// private address (those are always reached over HTTP).
func WithInsecure(insecure bool) Option { return func(o *options) { o.insecure = insecure } }

type publisher struct{ o options }

var _ Publisher = (*publisher)(nil)

// New returns a Publisher.
func New(opts ...Option) Publisher {
	p := &publisher{}
	for _, opt := range opts {
		opt(&p.o)
	}
	return p
}

// Remote returns the name and remote options that opts stand for, so that
// code beside a Publisher (signing, verifying) reaches the registry with the
// same credentials, transport and scheme.
func Remote(ctx context.Context, opts ...Option) ([]name.Option, []remote.Option) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	return o.nameOpts(), o.remoteOpts(ctx)
}

func (o *options) nameOpts() []name.Option {
	if o.insecure {
		return []name.Option{name.Insecure}
	}
	return nil
}

func (o *options) remoteOpts(ctx context.Context) []remote.Option {
	ro := []remote.Option{remote.WithContext(ctx), remote.WithAuth(authn.Anonymous)}
	if o.auth != nil {
		ro[1] = remote.WithAuth(o.auth)
	}
	if o.transport != nil {
		ro = append(ro, remote.WithTransport(o.transport))
	}
	return ro
}

// LayerMediaType returns the disk layer's media type for a file name, or an
// error for a name that is not a disk image.
func LayerMediaType(disk string) (string, error) {
	switch strings.ToLower(filepath.Ext(disk)) {
	case ".qcow2":
		return MediaTypeQCOW2, nil
	case ".raw", ".img":
		return MediaTypeRaw, nil
	}
	return "", fmt.Errorf("publishing %s: not a disk image (want .qcow2, .raw or .img)", disk)
}

func (p *publisher) Push(ctx context.Context, ref string, disk string, evidence []Evidence) (Result, error) {
	res := Result{Ref: ref}
	r, err := name.ParseReference(ref, p.o.nameOpts()...)
	if err != nil {
		return res, fmt.Errorf("publishing to %q: %w", ref, err)
	}
	for i, ev := range evidence {
		if ev.ArtifactType == "" {
			return res, fmt.Errorf("publishing evidence %d: no artifact type", i)
		}
		if len(ev.Data) > maxEvidence {
			return res, fmt.Errorf("publishing %s evidence: larger than %d bytes", ev.ArtifactType, maxEvidence)
		}
	}
	mt, err := LayerMediaType(disk)
	if err != nil {
		return res, err
	}
	layer, err := newFileLayer(disk, types.MediaType(mt))
	if err != nil {
		return res, err
	}
	pusher, err := remote.NewPusher(p.o.remoteOpts(ctx)...)
	if err != nil {
		return res, fmt.Errorf("publishing to %s: %w", ref, err)
	}
	repo := r.Context()
	// Every config is the same two bytes, whatever its media type says.
	for _, l := range []v1.Layer{static.NewLayer(emptyConfig, types.OCIEmptyJSON), layer} {
		if err := pusher.Upload(ctx, repo, l); err != nil {
			return res, fmt.Errorf("uploading %s to %s: %w", disk, repo, err)
		}
	}
	diskDesc := layer.descriptor()
	diskDesc.Annotations = map[string]string{annotationTitle: filepath.Base(disk)}
	image, err := artifactManifest(ArtifactTypeDiskImage, diskDesc, nil, nil)
	if err != nil {
		return res, err
	}
	res.Image = Pushed{ArtifactType: ArtifactTypeDiskImage, Digest: image.desc.Digest.String(), Size: image.desc.Size}
	res.DiskDigest = diskDesc.Digest.String()
	subject := v1.Descriptor{MediaType: image.desc.MediaType, Size: image.desc.Size, Digest: image.desc.Digest}

	// The referrers go first and the tagged image last: the subject may
	// be absent when a referrer is pushed, and a push cut short then
	// leaves no tag on an image without its evidence.
	for _, ev := range evidence {
		pushed, err := pushReferrer(ctx, pusher, repo, subject, ev)
		if err != nil {
			return res, err
		}
		res.Referrers = append(res.Referrers, pushed)
	}
	if p.o.beforeTag != nil {
		// The manifest goes up by digest first, so that what runs here
		// (a signature) names an image the registry already has.
		if err := pusher.Put(ctx, repo.Digest(res.Image.Digest), image); err != nil {
			return res, fmt.Errorf("pushing the manifest of %s to %s: %w", disk, repo, err)
		}
		if err := p.o.beforeTag(ctx, repo.Digest(res.Image.Digest), res); err != nil {
			return res, err
		}
	}
	if err := pusher.Put(ctx, r, image); err != nil {
		return res, fmt.Errorf("pushing the manifest of %s to %s: %w", disk, ref, err)
	}
	return res, nil
}

// pushReferrer uploads one evidence document and its referrer manifest,
// whose subject is the disk image.
func pushReferrer(ctx context.Context, pusher *remote.Pusher, repo name.Repository, subject v1.Descriptor, ev Evidence) (Pushed, error) {
	mt := ev.MediaType
	if mt == "" {
		mt = ev.ArtifactType
	}
	l := static.NewLayer(ev.Data, types.MediaType(mt))
	if err := pusher.Upload(ctx, repo, l); err != nil {
		return Pushed{}, fmt.Errorf("uploading %s evidence to %s: %w", ev.ArtifactType, repo, err)
	}
	desc, err := describe(l)
	if err != nil {
		return Pushed{}, err
	}
	m, err := artifactManifest(ev.ArtifactType, desc, &subject, ev.Annotations)
	if err != nil {
		return Pushed{}, err
	}
	// By digest: a referrer must not take over the tag; clients find it
	// through the subject.
	if err := pusher.Put(ctx, repo.Digest(m.desc.Digest.String()), m); err != nil {
		return Pushed{}, fmt.Errorf("pushing %s referrer of %s: %w", ev.ArtifactType, subject.Digest, err)
	}
	return Pushed{ArtifactType: ev.ArtifactType, Digest: m.desc.Digest.String(), Size: m.desc.Size}, nil
}

// Attach pushes one more evidence document as a referrer of the image
// (a disk image manifest already in the registry): evidence made once the
// image's digest is known, such as an OpenVEX document naming it.
func Attach(ctx context.Context, image name.Digest, ev Evidence, opts ...Option) (Pushed, error) {
	if ev.ArtifactType == "" || len(ev.Data) > maxEvidence {
		return Pushed{}, fmt.Errorf("attaching evidence to %s: no artifact type, or larger than %d bytes", image, maxEvidence)
	}
	_, ropts := Remote(ctx, opts...)
	desc, err := remote.Head(image, ropts...)
	if err != nil {
		return Pushed{}, fmt.Errorf("attaching %s evidence to %s: %w", ev.ArtifactType, image, err)
	}
	pusher, err := remote.NewPusher(ropts...)
	if err != nil {
		return Pushed{}, fmt.Errorf("attaching %s evidence to %s: %w", ev.ArtifactType, image, err)
	}
	subject := v1.Descriptor{MediaType: desc.MediaType, Size: desc.Size, Digest: desc.Digest}
	return pushReferrer(ctx, pusher, image.Context(), subject, ev)
}

// rawManifest is a manifest pushed as the bytes given.
type rawManifest struct {
	raw  []byte
	desc v1.Descriptor
}

func (m rawManifest) RawManifest() ([]byte, error)        { return m.raw, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

// artifactManifest is an artifact manifest with one layer and the empty
// config, and its descriptor.
func artifactManifest(artifactType string, layer v1.Descriptor, subject *v1.Descriptor, annotations map[string]string) (rawManifest, error) {
	m := v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  artifactType,
		// The config is the empty JSON document, typed as the artifact:
		// OCI 1.1 registries read artifactType, but some (distribution
		// 2.x behind the tag schema, go-containerregistry's own) report
		// a referrer's type from config.mediaType, the pre-1.1 convention.
		Config: v1.Descriptor{
			MediaType: types.MediaType(artifactType),
			Size:      int64(len(emptyConfig)),
			Digest:    emptyDigest(),
			Data:      emptyConfig,
		},
		Layers:      []v1.Descriptor{layer},
		Subject:     subject,
		Annotations: annotations,
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return rawManifest{}, fmt.Errorf("encoding the %s manifest: %w", artifactType, err)
	}
	h, size, err := v1.SHA256(bytes.NewReader(raw))
	if err != nil {
		return rawManifest{}, err
	}
	return rawManifest{raw: raw, desc: v1.Descriptor{MediaType: types.OCIManifestSchema1, Size: size, Digest: h, ArtifactType: artifactType}}, nil
}

func emptyDigest() v1.Hash {
	sum := sha256.Sum256(emptyConfig)
	return v1.Hash{Algorithm: "sha256", Hex: fmt.Sprintf("%x", sum)}
}

func describe(l v1.Layer) (v1.Descriptor, error) {
	d, err := l.Digest()
	if err != nil {
		return v1.Descriptor{}, err
	}
	size, err := l.Size()
	if err != nil {
		return v1.Descriptor{}, err
	}
	mt, err := l.MediaType()
	if err != nil {
		return v1.Descriptor{}, err
	}
	return v1.Descriptor{MediaType: mt, Size: size, Digest: d}, nil
}

// fileLayer is a layer backed by a file on disk: its digest is computed
// once by streaming the file, and each upload reopens it, so a disk image
// of many gigabytes never sits in memory.
type fileLayer struct {
	path   string
	mt     types.MediaType
	digest v1.Hash
	size   int64
}

var _ v1.Layer = (*fileLayer)(nil)

func newFileLayer(path string, mt types.MediaType) (*fileLayer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("publishing %s: %w", path, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("publishing %s: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("publishing %s: not a regular file", path)
	}
	h, size, err := v1.SHA256(f)
	if err != nil {
		return nil, fmt.Errorf("hashing %s: %w", path, err)
	}
	if size != info.Size() {
		return nil, fmt.Errorf("hashing %s: the file changed size while it was read", path)
	}
	return &fileLayer{path: path, mt: mt, digest: h, size: size}, nil
}

func (l *fileLayer) descriptor() v1.Descriptor {
	return v1.Descriptor{MediaType: l.mt, Size: l.size, Digest: l.digest}
}

// Digest returns the file's sha256, computed when the layer was made.
func (l *fileLayer) Digest() (v1.Hash, error) { return l.digest, nil }

// DiffID is the digest: the blob is stored as is, not compressed.
func (l *fileLayer) DiffID() (v1.Hash, error) { return l.digest, nil }

// Compressed opens the file; the registry checks the digest of what it
// receives, so a file changed since it was hashed fails the upload.
func (l *fileLayer) Compressed() (io.ReadCloser, error) {
	f, err := os.Open(l.path)
	if err != nil {
		return nil, fmt.Errorf("publishing %s: %w", l.path, err)
	}
	return f, nil
}

// Uncompressed is Compressed: the blob is the file.
func (l *fileLayer) Uncompressed() (io.ReadCloser, error) { return l.Compressed() }

// Size returns the file's size when it was hashed.
func (l *fileLayer) Size() (int64, error) { return l.size, nil }

// MediaType returns the disk layer's media type.
func (l *fileLayer) MediaType() (types.MediaType, error) { return l.mt, nil }

// Referrers lists the manifests whose subject is the manifest at ref (a tag
// or a digest reference). A tag is resolved to its digest first.
func Referrers(ctx context.Context, ref string, opts ...Option) ([]v1.Descriptor, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	r, err := name.ParseReference(ref, o.nameOpts()...)
	if err != nil {
		return nil, fmt.Errorf("listing referrers of %q: %w", ref, err)
	}
	d, ok := r.(name.Digest)
	if !ok {
		desc, err := remote.Head(r, o.remoteOpts(ctx)...)
		if err != nil {
			return nil, fmt.Errorf("resolving %s: %w", ref, err)
		}
		d = r.Context().Digest(desc.Digest.String())
	}
	idx, err := remote.Referrers(d, o.remoteOpts(ctx)...)
	if err != nil {
		return nil, fmt.Errorf("listing referrers of %s: %w", d, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("listing referrers of %s: %w", d, err)
	}
	return im.Manifests, nil
}
