package runtime

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"unicode"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

const (
	// SeededImagesDir is the OCI image layout the gpuhost-gpu provisioner
	// pre-seeds NGC bases into. It stays after the first-boot import into
	// containerd, so an image and the hosts booted from it read the same.
	SeededImagesDir = "/var/lib/gpuhost/images"
	// maxImageIndex bounds index.json: one entry is a few hundred bytes.
	maxImageIndex = 1 << 20
	// maxSeededImages bounds the entries taken from index.json.
	maxSeededImages = 512
	// maxImageRef bounds one reference.
	maxImageRef = 1024
)

// The annotations the seeder writes; containerd's name wins when both are
// there, as it does when containerd imports the layout.
const (
	annotationContainerdName = "io.containerd.image.name"
	annotationRefName        = "org.opencontainers.image.ref.name"
)

var layoutDigestRe = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// CollectContainers lists the images in the pre-seeded OCI layout
// (SeededImagesDir/index.json), each verified blob by blob against its
// digest. A target with no layout has no images, which is a fact, not an
// outage. It reads the target alone.
func CollectContainers(_ context.Context, env *collect.Env) (*facts.Containers, error) {
	name := SeededImagesDir + "/index.json"
	data, err := env.FS.ReadFileLimit(name, maxImageIndex)
	if err != nil {
		if sysroot.IsNotExist(err) {
			return &facts.Containers{Images: []facts.ContainerImage{}}, nil
		}
		return nil, fmt.Errorf("reading %s: %w", env.FS.Display(name), err)
	}
	entries, err := parseImageIndex(data)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", env.FS.Display(name), err)
	}
	images := []facts.ContainerImage{}
	var damaged []facts.DamagedImage
	verify := newSeedVerifier(env.FS)
	for _, e := range entries {
		problem, err := verify.image(e.Digest, 0)
		switch {
		case err != nil:
			return nil, fmt.Errorf("verifying seeded image %s: %w", e.Ref, err)
		case problem != "":
			// Listed but not whole: the image is not seeded, the checks
			// that pin it say so by its absence, and the facts say why.
			damaged = append(damaged, facts.DamagedImage{Ref: e.Ref, Digest: e.Digest, Reason: problem})
		default:
			images = append(images, facts.ContainerImage{Ref: e.Ref, Digest: e.Digest, Source: SeededImagesDir})
		}
	}
	return &facts.Containers{Images: images, Damaged: damaged}, nil
}

// seededImage is one entry of a layout's index.json.
type seededImage struct {
	Ref    string
	Digest string
}

// parseImageIndex reads an OCI image layout's index.json: every entry must
// carry a sha256 digest; its reference comes from the annotations and may
// be empty. Entries come back sorted by reference, then digest.
func parseImageIndex(data []byte) ([]seededImage, error) {
	var idx struct {
		SchemaVersion *int `json:"schemaVersion"`
		Manifests     []struct {
			Digest      string            `json:"digest"`
			Annotations map[string]string `json:"annotations"`
		} `json:"manifests"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&idx); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after the JSON object")
	}
	if idx.SchemaVersion == nil || *idx.SchemaVersion != 2 {
		return nil, errors.New("not an OCI image index: schemaVersion is not 2")
	}
	if len(idx.Manifests) > maxSeededImages {
		return nil, fmt.Errorf("%d images listed, more than %d", len(idx.Manifests), maxSeededImages)
	}
	out := make([]seededImage, 0, len(idx.Manifests))
	for i, m := range idx.Manifests {
		if !layoutDigestRe.MatchString(m.Digest) {
			return nil, fmt.Errorf("manifests[%d]: digest %q is not sha256:<64 hex>", i, m.Digest)
		}
		ref := m.Annotations[annotationContainerdName]
		if ref == "" {
			ref = m.Annotations[annotationRefName]
		}
		if len(ref) > maxImageRef {
			return nil, fmt.Errorf("manifests[%d]: the reference is %d bytes long, more than %d", i, len(ref), maxImageRef)
		}
		if strings.IndexFunc(ref, func(r rune) bool { return unicode.IsControl(r) || unicode.IsSpace(r) || r == unicode.ReplacementChar }) >= 0 {
			return nil, fmt.Errorf("manifests[%d]: %q is not an image reference", i, ref)
		}
		out = append(out, seededImage{Ref: ref, Digest: m.Digest})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Ref != out[j].Ref {
			return out[i].Ref < out[j].Ref
		}
		return out[i].Digest < out[j].Digest
	})
	return out, nil
}

// SeededImageRefs returns the references the pre-seeded layout's index.json
// lists, sorted, without checking their blobs: the names a first-boot
// import gave containerd. It is empty when nothing was seeded.
func SeededImageRefs(fsys sysroot.FS) ([]string, error) {
	name := SeededImagesDir + "/index.json"
	data, err := fsys.ReadFileLimit(name, maxImageIndex)
	if sysroot.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", fsys.Display(name), err)
	}
	entries, err := parseImageIndex(data)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", fsys.Display(name), err)
	}
	var refs []string
	for _, e := range entries {
		if e.Ref != "" {
			refs = append(refs, e.Ref)
		}
	}
	return refs, nil
}
