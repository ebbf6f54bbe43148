// Package sign signs a published disk image and attaches its provenance in
// the registry layout cosign reads, and checks both with a public key,
// offline: no transparency log, no certificate authority.
//
// The layout is cosign's key-based one. The signature is a simple signing
// payload (sigstore's payload.Cosign) naming the image's manifest digest,
// pushed as a layer of the image tagged sha256-<hex>.sig beside it, with the
// base64 signature in the layer's dev.cosignproject.cosign/signature
// annotation. The provenance is an in-toto statement in a DSSE envelope
// (sigstore's dsse.WrapSigner) pushed as a layer of the image tagged
// sha256-<hex>.att, annotated with its predicateType. `cosign verify --key`
// and `cosign verify-attestation --key` read exactly these; cosign's own
// Go packages would write them too, but they bring rekor, fulcio, TUF and
// sigstore-go with them (about 80 more modules), for a layout of two tags.
package sign

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	ssldsse "github.com/secure-systems-lab/go-securesystemslib/dsse"
	"github.com/sigstore/sigstore/pkg/signature/dsse"
	sigopts "github.com/sigstore/sigstore/pkg/signature/options"
	"github.com/sigstore/sigstore/pkg/signature/payload"

	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// Media types, annotations and tag suffixes of cosign's layout.
const (
	// SimpleSigningMediaType is the layer media type of a signature payload.
	SimpleSigningMediaType = "application/vnd.dev.cosign.simplesigning.v1+json"
	// DSSEMediaType is the layer media type of an attestation: a DSSE
	// envelope.
	DSSEMediaType = "application/vnd.dsse.envelope.v1+json"
	// InTotoPayloadType is the DSSE payload type of an in-toto statement.
	InTotoPayloadType = "application/vnd.in-toto+json"
	// SignatureAnnotation carries a signature layer's base64 signature.
	SignatureAnnotation = "dev.cosignproject.cosign/signature"
	// PredicateTypeAnnotation carries an attestation layer's predicate type.
	PredicateTypeAnnotation = "predicateType"

	signatureSuffix   = "sig"
	attestationSuffix = "att"
)

// maxPayload bounds one signature payload or envelope read back: a
// provenance statement is a few KiB, so this only stops a hostile layer.
const maxPayload = 4 << 20

// maxLayers bounds the signatures or attestations tried on one image.
const maxLayers = 64

// ErrNotFound is wrapped by the verify functions when the image carries no
// signature or no attestation at all.
var ErrNotFound = errors.New("not found")

// Pushed is a signature or attestation image written to the registry.
type Pushed struct {
	// Tag is the sha256-<hex>.sig or .att tag.
	Tag string `json:"tag"`
	// Digest is the manifest digest of the tagged image.
	Digest string `json:"digest"`
}

// SignatureTag is where cosign looks for the signatures of image.
func SignatureTag(image name.Digest) (name.Tag, error) { return suffixTag(image, signatureSuffix) }

// AttestationTag is where cosign looks for the attestations of image.
func AttestationTag(image name.Digest) (name.Tag, error) {
	return suffixTag(image, attestationSuffix)
}

func suffixTag(image name.Digest, suffix string) (name.Tag, error) {
	h, err := v1.NewHash(image.DigestStr())
	if err != nil {
		return name.Tag{}, fmt.Errorf("tagging the %s of %s: %w", suffix, image, err)
	}
	return image.Context().Tag(h.Algorithm + "-" + h.Hex + "." + suffix), nil
}

// Sign signs image's manifest digest and adds the signature to the image
// at its .sig tag. The payload's claimed identity is the repository, as
// cosign writes it for a digest reference.
func Sign(ctx context.Context, s Signer, image name.Digest, opts ...remote.Option) (Pushed, error) {
	body, err := json.Marshal(payload.Cosign{Image: image})
	if err != nil {
		return Pushed{}, fmt.Errorf("encoding the signature payload of %s: %w", image, err)
	}
	sig, err := s.SignMessage(bytes.NewReader(body), sigopts.WithContext(ctx))
	if err != nil {
		return Pushed{}, fmt.Errorf("signing %s: %w", image, err)
	}
	tag, err := SignatureTag(image)
	if err != nil {
		return Pushed{}, err
	}
	return appendLayer(ctx, tag, body, SimpleSigningMediaType,
		map[string]string{SignatureAnnotation: base64.StdEncoding.EncodeToString(sig)}, opts)
}

// Attest signs statement (an in-toto statement of predicateType about
// image) into a DSSE envelope and adds it to the image at its .att tag.
func Attest(ctx context.Context, s Signer, image name.Digest, statement []byte, predicateType string, opts ...remote.Option) (Pushed, error) {
	env, err := dsse.WrapSigner(s, InTotoPayloadType).SignMessage(bytes.NewReader(statement), sigopts.WithContext(ctx))
	if err != nil {
		return Pushed{}, fmt.Errorf("signing the %s attestation of %s: %w", predicateType, image, err)
	}
	tag, err := AttestationTag(image)
	if err != nil {
		return Pushed{}, err
	}
	// cosign attest leaves the signature annotation empty: the signature
	// is inside the envelope.
	return appendLayer(ctx, tag, env, DSSEMediaType,
		map[string]string{SignatureAnnotation: "", PredicateTypeAnnotation: predicateType}, opts)
}

// appendLayer adds one layer to the image at tag, or makes that image, so
// that a second signer (another key, a re-publish of the same digest) adds
// to the signatures instead of replacing them, as cosign does.
func appendLayer(ctx context.Context, tag name.Tag, data []byte, mt types.MediaType, annotations map[string]string, opts []remote.Option) (Pushed, error) {
	opts = append(opts, remote.WithContext(ctx))
	base, err := existing(tag, opts)
	if err != nil {
		return Pushed{}, err
	}
	img, err := mutate.Append(base, mutate.Addendum{Layer: static.NewLayer(data, mt), Annotations: annotations})
	if err != nil {
		return Pushed{}, fmt.Errorf("adding to %s: %w", tag, err)
	}
	if err := remote.Write(tag, img, opts...); err != nil {
		return Pushed{}, fmt.Errorf("pushing %s: %w", tag, err)
	}
	d, err := img.Digest()
	if err != nil {
		return Pushed{}, fmt.Errorf("pushing %s: %w", tag, err)
	}
	return Pushed{Tag: tag.String(), Digest: d.String()}, nil
}

// existing is the image at tag, or an empty OCI image when there is none.
func existing(tag name.Tag, opts []remote.Option) (v1.Image, error) {
	img, err := remote.Image(tag, opts...)
	if err == nil {
		m, err := img.Manifest()
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", tag, err)
		}
		if len(m.Layers) >= maxLayers {
			return nil, fmt.Errorf("adding to %s: it already holds %d layers", tag, len(m.Layers))
		}
		return img, nil
	}
	if !isNotFound(err) {
		return nil, fmt.Errorf("reading %s: %w", tag, err)
	}
	// OCI media types throughout, as cosign writes by default.
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	return mutate.ConfigMediaType(base, types.OCIConfigJSON), nil
}

func isNotFound(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && te.StatusCode == http.StatusNotFound
}

// layer is one signature or attestation layer read back.
type layer struct {
	desc v1.Descriptor
	data []byte
}

// layers reads the layers of mediaType from the image at tag, each bounded.
// No image there wraps ErrNotFound.
func layers(ctx context.Context, tag name.Tag, mediaType types.MediaType, opts []remote.Option) ([]layer, error) {
	opts = append(opts, remote.WithContext(ctx))
	img, err := remote.Image(tag, opts...)
	if isNotFound(err) {
		return nil, fmt.Errorf("reading %s: %w", tag, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", tag, err)
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", tag, err)
	}
	var out []layer
	for _, d := range m.Layers {
		if d.MediaType != mediaType {
			continue
		}
		if len(out) == maxLayers {
			return nil, fmt.Errorf("reading %s: more than %d layers of %s", tag, maxLayers, mediaType)
		}
		if d.Size > maxPayload {
			return nil, fmt.Errorf("reading %s: layer %s is %d bytes, more than %d", tag, d.Digest, d.Size, maxPayload)
		}
		l, err := img.LayerByDigest(d.Digest)
		if err != nil {
			return nil, fmt.Errorf("reading layer %s of %s: %w", d.Digest, tag, err)
		}
		rc, err := l.Compressed()
		if err != nil {
			return nil, fmt.Errorf("reading layer %s of %s: %w", d.Digest, tag, err)
		}
		// Read to the end: the registry's reader checks the digest there.
		data, err := sysroot.ReadAllLimit(rc, maxPayload, "layer "+d.Digest.String())
		rc.Close()
		if errors.Is(err, sysroot.ErrTooLarge) {
			return nil, fmt.Errorf("reading %s: layer %s is more than %d bytes, the manifest says %d", tag, d.Digest, maxPayload, d.Size)
		}
		if err != nil {
			return nil, fmt.Errorf("reading layer %s of %s: %w", d.Digest, tag, err)
		}
		if int64(len(data)) != d.Size {
			return nil, fmt.Errorf("reading layer %s of %s: %d bytes, the manifest says %d", d.Digest, tag, len(data), d.Size)
		}
		out = append(out, layer{desc: d, data: data})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("reading %s: no %s layer: %w", tag, mediaType, ErrNotFound)
	}
	return out, nil
}

// VerifySignature checks that the image at its .sig tag carries at least
// one signature by v over a payload naming image's digest. It returns nil
// for the first that does, and otherwise every reason the others failed.
func VerifySignature(ctx context.Context, v Verifier, image name.Digest, opts ...remote.Option) error {
	tag, err := SignatureTag(image)
	if err != nil {
		return err
	}
	ls, err := layers(ctx, tag, SimpleSigningMediaType, opts)
	if err != nil {
		return fmt.Errorf("verifying the signature of %s: %w", image, err)
	}
	var errs []error
	for _, l := range ls {
		if err := checkSignature(v, image, l); err != nil {
			errs = append(errs, fmt.Errorf("layer %s: %w", l.desc.Digest, err))
			continue
		}
		return nil
	}
	return fmt.Errorf("verifying the signature of %s: %w", image, errors.Join(errs...))
}

func checkSignature(v Verifier, image name.Digest, l layer) error {
	sig, err := base64.StdEncoding.DecodeString(l.desc.Annotations[SignatureAnnotation])
	if err != nil || len(sig) == 0 {
		return errors.New("no base64 signature in its annotation")
	}
	if err := v.VerifySignature(bytes.NewReader(sig), bytes.NewReader(l.data)); err != nil {
		return err
	}
	// Only a verified payload is parsed.
	var p payload.Cosign
	if err := json.Unmarshal(l.data, &p); err != nil {
		return fmt.Errorf("parsing the signed payload: %w", err)
	}
	if got := p.Image.DigestStr(); got != image.DigestStr() {
		return fmt.Errorf("the signed payload names %s, not %s", got, image.DigestStr())
	}
	return nil
}

// VerifyAttestations returns the payloads of the DSSE envelopes at image's
// .att tag that v signed, that carry an in-toto statement, and whose layer
// says predicateType. The caller parses the statement and checks that its
// subject is image. None wraps ErrNotFound or the reasons each failed.
func VerifyAttestations(ctx context.Context, v Verifier, image name.Digest, predicateType string, opts ...remote.Option) ([][]byte, error) {
	tag, err := AttestationTag(image)
	if err != nil {
		return nil, err
	}
	ls, err := layers(ctx, tag, DSSEMediaType, opts)
	if err != nil {
		return nil, fmt.Errorf("verifying the attestations of %s: %w", image, err)
	}
	var out [][]byte
	var errs []error
	for _, l := range ls {
		if l.desc.Annotations[PredicateTypeAnnotation] != predicateType {
			continue
		}
		p, err := OpenEnvelope(v, l.data)
		if err != nil {
			errs = append(errs, fmt.Errorf("layer %s: %w", l.desc.Digest, err))
			continue
		}
		out = append(out, p)
	}
	if len(out) == 0 {
		if len(errs) == 0 {
			errs = append(errs, fmt.Errorf("no %s attestation: %w", predicateType, ErrNotFound))
		}
		return nil, fmt.Errorf("verifying the attestations of %s: %w", image, errors.Join(errs...))
	}
	return out, nil
}

// OpenEnvelope verifies a DSSE envelope with v and returns its payload,
// which must be an in-toto statement.
func OpenEnvelope(v Verifier, envelope []byte) ([]byte, error) {
	if err := dsse.WrapVerifier(v).VerifySignature(bytes.NewReader(envelope), nil); err != nil {
		return nil, fmt.Errorf("verifying the DSSE envelope: %w", err)
	}
	var env ssldsse.Envelope
	if err := json.Unmarshal(envelope, &env); err != nil {
		return nil, fmt.Errorf("parsing the DSSE envelope: %w", err)
	}
	if env.PayloadType != InTotoPayloadType {
		return nil, fmt.Errorf("the DSSE envelope's payload type is %q, want %q", env.PayloadType, InTotoPayloadType)
	}
	p, err := env.DecodeB64Payload()
	if err != nil {
		return nil, fmt.Errorf("decoding the DSSE payload: %w", err)
	}
	return p, nil
}
