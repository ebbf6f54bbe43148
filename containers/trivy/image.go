package trivy

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"testing/fstest"

	ftypes "github.com/aquasecurity/trivy/pkg/fanal/types"
	"github.com/aquasecurity/trivy/pkg/types"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/osinfo"
	"github.com/gpuhost/gpuhost/facts/packages"
	"github.com/gpuhost/gpuhost/facts/sysroot"
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
	img, name, closer, err := openImage(layoutDir, digest)
	if err != nil {
		return nil, err
	}
	defer closer.Close()
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
	img, name, closer, err := openImage(layoutDir, digest)
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	inv, err := imageInventory(ctx, img, name)
	if err != nil {
		return nil, err
	}
	return matchInventory(ctx, inv, dbDir)
}

// openImage finds digest in the layout and names it by its ref.name
// annotation when the index has one, else layoutDir@digest. The layout is
// read as a scanned target's is, through its own root.
// The caller closes the layout once done with the image, whose blobs are
// read lazily.
func openImage(layoutDir, digest string) (_ v1.Image, name string, _ io.Closer, err error) {
	fsys, closer, err := sysroot.Open(layoutDir)
	if err != nil {
		return nil, "", nil, fmt.Errorf("opening OCI layout %s: %w", layoutDir, err)
	}
	defer func() {
		if err != nil {
			closer.Close()
		}
	}()
	data, err := fsys.ReadFileLimit("index.json", maxSeededManifest)
	if err != nil {
		return nil, "", nil, fmt.Errorf("reading %s/index.json: %w", layoutDir, err)
	}
	im, err := v1.ParseIndexManifest(bytes.NewReader(data))
	if err != nil {
		return nil, "", nil, fmt.Errorf("reading %s/index.json: %w", layoutDir, err)
	}
	name = layoutDir + "@" + digest
	listed := false
	for _, d := range im.Manifests {
		if d.Digest.String() != digest {
			continue
		}
		listed = true
		if ref := d.Annotations[refNameAnnotation]; ref != "" {
			name = ref
		}
	}
	if !listed {
		return nil, "", nil, fmt.Errorf("image %s is not in %s/index.json", digest, layoutDir)
	}
	img, err := targetLayout{fsys: fsys, dir: ""}.image(digest)
	if err != nil {
		return nil, "", nil, fmt.Errorf("image %s in %s: %w", digest, layoutDir, err)
	}
	return img, name, closer, nil
}

// imageInventory reads the wanted files out of the image's flattened
// filesystem into memory and parses them as readInventory does a directory.
func imageInventory(ctx context.Context, img v1.Image, name string) (*inventory, error) {
	rc := mutate.Extract(img)
	defer rc.Close()
	files, err := pickFiles(ctx, tar.NewReader(rc))
	if err == nil {
		// go-containerregistry ends the tar stream before it reports a
		// layer that failed to read: what follows the end is that error.
		_, err = io.Copy(io.Discard, rc)
	}
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
