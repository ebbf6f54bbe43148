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

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/osinfo"
	"github.com/gpuhost/gpuhost/facts/packages"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

const (
	// maxTarEntries bounds the entries read from an image's layers; the
	// largest NGC images have a few hundred thousand.
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
// os-release and the dpkg status are taken from the image's layers,
// applied in order as containerd would, in memory and bounded; nothing is
// unpacked to disk.
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

// imageInventory reads the wanted files out of the image's filesystem into
// memory and parses them as readInventory does a directory.
func imageInventory(ctx context.Context, img v1.Image, name string) (*inventory, error) {
	files, err := imageFiles(ctx, img)
	if err != nil {
		return nil, fmt.Errorf("reading the filesystem of %s: %w", name, err)
	}
	return readInventory(sysroot.FromFS(files, name))
}

// imageFiles applies the image's layers in order, as containerd unpacks
// them, keeping only the wanted files. Within a layer a path's last entry
// wins, as extracting the tar in order leaves it; go-containerregistry's
// flattening (mutate.Extract) keeps the first instead, so a layer that
// carries a decoy dpkg status before the real one would show the decoy.
// A whiteout removes what lower layers put at its path, an opaque
// directory what they put under it, and an entry that is not a regular
// file or symlink takes a wanted path away.
func imageFiles(ctx context.Context, img v1.Image) (fstest.MapFS, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, err
	}
	files := fstest.MapFS{}
	entries := 0
	for _, l := range layers {
		if err := applyLayer(ctx, l, files, &entries); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// applyLayer applies one layer's tar stream to files; entries counts the
// tar entries read across layers against maxTarEntries.
func applyLayer(ctx context.Context, l v1.Layer, files fstest.MapFS, entries *int) error {
	rc, err := l.Uncompressed()
	if err != nil {
		return layerError(l, err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	// What this layer wrote: its whiteouts hide only what lies below.
	mine := map[string]bool{}
	removeBelow := func(match func(string) bool) {
		for k := range files {
			if !mine[k] && match(k) {
				delete(files, k)
			}
		}
	}
	for {
		if *entries++; *entries > maxTarEntries {
			return fmt.Errorf("more than %d entries", maxTarEntries)
		}
		if *entries%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			// The blob's digest is checked at its end, past the tar's: a
			// layer whose bytes are not its digest's must fail, not just
			// the files read so far stand.
			if _, err := io.Copy(io.Discard, rc); err != nil {
				return layerError(l, err)
			}
			return nil
		}
		if err != nil {
			return layerError(l, err)
		}
		name := strings.TrimPrefix(path.Clean("/"+hdr.Name), "/")
		dir, base := path.Split(name)
		switch {
		case base == ".wh..wh..opq":
			removeBelow(func(k string) bool { return strings.HasPrefix(k, dir) })
			continue
		case strings.HasPrefix(base, ".wh."):
			gone := dir + strings.TrimPrefix(base, ".wh.")
			removeBelow(func(k string) bool { return k == gone || strings.HasPrefix(k, gone+"/") })
			continue
		case hdr.Typeflag != tar.TypeDir:
			// A file where a directory was takes what was under it.
			for k := range files {
				if strings.HasPrefix(k, name+"/") {
					delete(files, k)
				}
			}
		}
		limit, ok := wanted[name]
		if !ok {
			continue
		}
		switch hdr.Typeflag {
		case tar.TypeReg:
			if hdr.Size > limit {
				return fmt.Errorf("/%s: %w", name, sysroot.ErrTooLarge)
			}
			data, err := sysroot.ReadAllLimit(tr, limit, "/"+name)
			if err != nil {
				return layerError(l, err)
			}
			files[name] = &fstest.MapFile{Data: data, Mode: 0o644}
		case tar.TypeSymlink:
			files[name] = &fstest.MapFile{Data: []byte(hdr.Linkname), Mode: fs.ModeSymlink | 0o777}
		case tar.TypeLink:
			// A hard link shares its target's bytes, which were kept only
			// if the target is wanted too.
			target := strings.TrimPrefix(path.Clean("/"+hdr.Linkname), "/")
			f, ok := files[target]
			if !ok || f.Mode&fs.ModeSymlink != 0 {
				return fmt.Errorf("/%s is a hard link to /%s, which is not read", name, target)
			}
			files[name] = &fstest.MapFile{Data: f.Data, Mode: f.Mode}
		default:
			delete(files, name)
		}
		mine[name] = true
	}
}

// layerError names the layer a read failed in.
func layerError(l v1.Layer, err error) error {
	if d, derr := l.Digest(); derr == nil && !strings.Contains(err.Error(), d.String()) {
		return fmt.Errorf("layer %s: %w", d, err)
	}
	return err
}
