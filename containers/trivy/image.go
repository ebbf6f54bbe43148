package trivy

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"runtime"
	"strings"
	"testing/fstest"

	ftypes "github.com/aquasecurity/trivy/pkg/fanal/types"
	"github.com/aquasecurity/trivy/pkg/types"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/gpuhost/gpuhost/checks/osinfo"
	"github.com/gpuhost/gpuhost/checks/packages"
	"github.com/gpuhost/gpuhost/checks/sysroot"
	"github.com/gpuhost/gpuhost/facts"
)

const (
	// maxTarEntries bounds the entries read from an image's flattened
	// filesystem; the largest NGC images have a few hundred thousand.
	maxTarEntries = 5_000_000
	// maxBlobs bounds the blobs/sha256 listing checked before opening.
	maxBlobs = 100_000
	// refNameAnnotation names an image in an OCI layout's index.
	refNameAnnotation = "org.opencontainers.image.ref.name"
)

// wanted are the only files taken from an image, what readInventory reads,
// each with the bound its reader holds it to.
var wanted = map[string]int64{
	strings.TrimPrefix(packages.DpkgStatusPath, "/"):  packages.MaxDpkgStatus,
	strings.TrimPrefix(osinfo.OSReleasePaths[0], "/"): osinfo.MaxOSRelease,
	strings.TrimPrefix(osinfo.OSReleasePaths[1], "/"): osinfo.MaxOSRelease,
}

// SBOMImage returns a CycloneDX 1.6 JSON document of the OS packages of the
// image with the given manifest digest ("sha256:...") in the OCI layout
// directory layoutDir, as the NGC seeding writes it. A digest naming an
// index picks its linux image for this machine's architecture. Only
// os-release and the dpkg status are taken from the image's flattened
// filesystem, in memory and bounded; nothing is unpacked to disk.
func SBOMImage(ctx context.Context, layoutDir, digest string) ([]byte, error) {
	img, name, err := openImage(layoutDir, digest)
	if err != nil {
		return nil, err
	}
	inv, err := imageInventory(ctx, img, name)
	if err != nil {
		return nil, err
	}
	md := types.Metadata{}
	if cfg, err := img.ConfigName(); err == nil {
		md.ImageID = cfg.String()
	}
	return encodeSBOM(ctx, inv, name, ftypes.TypeContainerImage, md)
}

// ImageVulnerabilities is Vulnerabilities for an image in an OCI layout,
// chosen as SBOMImage chooses it.
func ImageVulnerabilities(ctx context.Context, layoutDir, digest, dbDir string) (*facts.Vulnerabilities, error) {
	img, name, err := openImage(layoutDir, digest)
	if err != nil {
		return nil, err
	}
	inv, err := imageInventory(ctx, img, name)
	if err != nil {
		return nil, err
	}
	return matchInventory(ctx, inv, dbDir)
}

// openImage finds digest in the layout and names it by its ref.name
// annotation when the index has one, else layoutDir@digest.
func openImage(layoutDir, digest string) (v1.Image, string, error) {
	h, err := v1.NewHash(digest)
	if err != nil {
		return nil, "", fmt.Errorf("image digest %q: %w", digest, err)
	}
	if err := checkLayout(layoutDir); err != nil {
		return nil, "", err
	}
	p, err := layout.FromPath(layoutDir)
	if err != nil {
		return nil, "", fmt.Errorf("opening OCI layout %s: %w", layoutDir, err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		return nil, "", fmt.Errorf("reading %s/index.json: %w", layoutDir, err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return nil, "", fmt.Errorf("reading %s/index.json: %w", layoutDir, err)
	}
	name := layoutDir + "@" + digest
	for _, d := range im.Manifests {
		if d.Digest != h {
			continue
		}
		if ref := d.Annotations[refNameAnnotation]; ref != "" {
			name = ref
		}
		if d.MediaType.IsIndex() {
			img, err := pickPlatform(idx, h)
			return img, name, err
		}
		img, err := idx.Image(h)
		if err != nil {
			return nil, "", fmt.Errorf("image %s in %s: %w", digest, layoutDir, err)
		}
		return img, name, nil
	}
	return nil, "", fmt.Errorf("image %s is not in %s/index.json", digest, layoutDir)
}

// pickPlatform chooses the linux image for this architecture from a nested
// index.
func pickPlatform(idx v1.ImageIndex, h v1.Hash) (v1.Image, error) {
	child, err := idx.ImageIndex(h)
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", h, err)
	}
	cm, err := child.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("index %s: %w", h, err)
	}
	for _, d := range cm.Manifests {
		if d.Platform != nil && d.Platform.OS == "linux" && d.Platform.Architecture == runtime.GOARCH && d.MediaType.IsImage() {
			return child.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("index %s has no linux/%s image", h, runtime.GOARCH)
}

// checkLayout refuses a layout whose blobs are anything but regular files.
// go-containerregistry opens blobs with os.Open, which would follow a link
// out of the layout or block on a FIFO; a layout found inside an image is
// as untrusted as the image.
func checkLayout(dir string) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("opening OCI layout %s: %w", dir, err)
	}
	defer root.Close()
	for _, name := range []string{"index.json", "oci-layout", "blobs", "blobs/sha256"} {
		st, err := root.Lstat(name)
		if err != nil {
			return fmt.Errorf("OCI layout %s: %w", dir, err)
		}
		isDir := strings.HasPrefix(name, "blobs")
		if (isDir && !st.IsDir()) || (!isDir && !st.Mode().IsRegular()) {
			return fmt.Errorf("OCI layout %s: %s is a %s", dir, name, st.Mode().Type())
		}
	}
	f, err := root.Open("blobs/sha256")
	if err != nil {
		return fmt.Errorf("OCI layout %s: %w", dir, err)
	}
	defer f.Close()
	entries, err := f.ReadDir(maxBlobs + 1)
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("OCI layout %s: listing blobs: %w", dir, err)
	}
	if len(entries) > maxBlobs {
		return fmt.Errorf("OCI layout %s: more than %d blobs", dir, maxBlobs)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			return fmt.Errorf("OCI layout %s: blob %s is not a regular file", dir, e.Name())
		}
	}
	return nil
}

// imageInventory reads the wanted files out of the image's flattened
// filesystem into memory and parses them as readInventory does a directory.
func imageInventory(ctx context.Context, img v1.Image, name string) (*inventory, error) {
	rc := mutate.Extract(img)
	defer rc.Close()
	files, err := pickFiles(ctx, tar.NewReader(rc))
	if err != nil {
		return nil, fmt.Errorf("reading the filesystem of %s: %w", name, err)
	}
	return readInventory(sysroot.FromFS(files, name))
}

// pickFiles keeps the wanted regular files and symlinks of a tar stream.
// Links stay links: sysroot resolves them inside the picked set, so a link
// to anything else reads as absent.
func pickFiles(ctx context.Context, tr *tar.Reader) (fstest.MapFS, error) {
	files := fstest.MapFS{}
	for n := 0; ; n++ {
		if n >= maxTarEntries {
			return nil, fmt.Errorf("more than %d entries", maxTarEntries)
		}
		if n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		name := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
		limit, ok := wanted[name]
		if !ok {
			continue
		}
		switch hdr.Typeflag {
		case tar.TypeReg:
			if hdr.Size > limit {
				return nil, fmt.Errorf("/%s: %w", name, sysroot.ErrTooLarge)
			}
			data, err := sysroot.ReadAllLimit(tr, limit, "/"+name)
			if err != nil {
				return nil, err
			}
			files[name] = &fstest.MapFile{Data: data, Mode: 0o644}
		case tar.TypeSymlink:
			files[name] = &fstest.MapFile{Data: []byte(hdr.Linkname), Mode: fs.ModeSymlink | 0o777}
		}
	}
}
