package runtime

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// Bounds on verifying a seeded image: its manifests are small, its layers
// may be gigabytes, and the whole layout is hashed at most once per scan.
const (
	maxManifestBlob  = 4 << 20
	maxBlobsPerImage = 1024
	maxSeedHashBytes = 256 << 30
	maxIndexDepth    = 2
)

// seedVerifier hashes the blobs of a seeded OCI layout. A blob counts only
// when its bytes hash to the digest that names it and its size is the one
// its descriptor states: an empty file named after a digest is no image.
type seedVerifier struct {
	fsys sysroot.FS
	// budget is the bytes left to hash in this scan.
	budget int64
	// seen are blobs already verified, by digest; layouts share layers.
	seen map[v1.Hash]bool
}

func newSeedVerifier(fsys sysroot.FS) *seedVerifier {
	return &seedVerifier{fsys: fsys, budget: maxSeedHashBytes, seen: map[v1.Hash]bool{}}
}

func blobPath(h v1.Hash) string { return SeededImagesDir + "/blobs/" + h.Algorithm + "/" + h.Hex }

// image verifies the manifest (or index) named by digest and everything it
// names. problem says why the image is not whole ("" when it is); err is a
// failure to read that is not the image's fault to judge, or a bound hit.
func (v *seedVerifier) image(digest string, depth int) (problem string, err error) {
	h, err := v1.NewHash(digest)
	if err != nil {
		return fmt.Sprintf("digest %q: %v", digest, err), nil
	}
	data, problem, err := v.manifest(h)
	if problem != "" || err != nil {
		return problem, err
	}
	var kind struct {
		MediaType types.MediaType `json:"mediaType"`
		Manifests []any           `json:"manifests"`
	}
	if err := json.Unmarshal(data, &kind); err != nil {
		return fmt.Sprintf("manifest %s: %v", h, err), nil
	}
	if !kind.MediaType.IsIndex() && kind.Manifests == nil {
		m, err := v1.ParseManifest(bytes.NewReader(data))
		if err != nil {
			return fmt.Sprintf("manifest %s: %v", h, err), nil
		}
		return v.manifestBlobs(h, m)
	}
	idx, err := v1.ParseIndexManifest(bytes.NewReader(data))
	if err != nil {
		return fmt.Sprintf("index %s: %v", h, err), nil
	}
	if depth >= maxIndexDepth {
		return fmt.Sprintf("index %s nests more than %d deep", h, maxIndexDepth), nil
	}
	if len(idx.Manifests) > maxBlobsPerImage {
		return fmt.Sprintf("index %s lists %d manifests, more than %d", h, len(idx.Manifests), maxBlobsPerImage), nil
	}
	// A seeder keeps the index and the platforms it pulled, not every
	// platform the index lists: a child that is absent is another
	// platform's, one that is present must be whole, and one at least must be.
	whole := 0
	for _, d := range idx.Manifests {
		if _, err := v.fsys.Stat(blobPath(d.Digest)); sysroot.IsNotExist(err) {
			continue
		}
		if p, err := v.image(d.Digest.String(), depth+1); p != "" || err != nil {
			return p, err
		}
		whole++
	}
	if whole == 0 {
		return fmt.Sprintf("index %s has none of its %d manifests in the layout", h, len(idx.Manifests)), nil
	}
	return "", nil
}

// manifest reads and verifies a manifest blob, which is small enough to hold.
func (v *seedVerifier) manifest(h v1.Hash) ([]byte, string, error) {
	data, err := v.fsys.ReadFileLimit(blobPath(h), maxManifestBlob)
	switch {
	case sysroot.IsNotExist(err):
		return nil, fmt.Sprintf("manifest blob %s is missing", h), nil
	case err != nil:
		return nil, fmt.Sprintf("manifest blob %s: %v", h, err), nil
	}
	sum := sha256.Sum256(data)
	if h.Algorithm != "sha256" || hex.EncodeToString(sum[:]) != h.Hex {
		return nil, fmt.Sprintf("manifest blob %s does not hash to its digest", h), nil
	}
	return data, "", nil
}

func (v *seedVerifier) manifestBlobs(h v1.Hash, m *v1.Manifest) (string, error) {
	descs := append([]v1.Descriptor{m.Config}, m.Layers...)
	if len(descs) > maxBlobsPerImage {
		return fmt.Sprintf("manifest %s lists %d blobs, more than %d", h, len(descs), maxBlobsPerImage), nil
	}
	for _, d := range descs {
		if p, err := v.blob(d); p != "" || err != nil {
			return p, err
		}
	}
	return "", nil
}

// blob hashes one config or layer blob as it streams.
func (v *seedVerifier) blob(d v1.Descriptor) (string, error) {
	if v.seen[d.Digest] {
		return "", nil
	}
	if d.Digest.Algorithm != "sha256" || d.Size < 0 {
		return fmt.Sprintf("blob %s: want a sha256 digest and a size", d.Digest), nil
	}
	if d.Size > v.budget {
		return "", fmt.Errorf("verifying seeded images: blob %s (%d bytes) is past the %d bytes one scan hashes", d.Digest, d.Size, int64(maxSeedHashBytes))
	}
	r, err := v.fsys.Stream(blobPath(d.Digest), d.Size)
	switch {
	case sysroot.IsNotExist(err):
		return fmt.Sprintf("blob %s is missing", d.Digest), nil
	case err != nil:
		return fmt.Sprintf("blob %s: %v", d.Digest, err), nil
	}
	defer r.Close()
	sum := sha256.New()
	n, err := io.Copy(sum, r)
	v.budget -= n
	if err != nil {
		return fmt.Sprintf("blob %s: %v", d.Digest, err), nil
	}
	if n != d.Size {
		return fmt.Sprintf("blob %s is %d bytes; its descriptor says %d", d.Digest, n, d.Size), nil
	}
	if hex.EncodeToString(sum.Sum(nil)) != d.Digest.Hex {
		return fmt.Sprintf("blob %s does not hash to its digest", d.Digest), nil
	}
	v.seen[d.Digest] = true
	return "", nil
}
