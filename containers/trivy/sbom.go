package trivy

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	ftypes "github.com/aquasecurity/trivy/pkg/fanal/types"
	"github.com/aquasecurity/trivy/pkg/sbom/cyclonedx"
	"github.com/aquasecurity/trivy/pkg/types"

	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// reportSchemaVersion is the trivy report schema the SBOM encoder expects.
const reportSchemaVersion = 2

// SBOM returns a CycloneDX 1.6 JSON document listing the OS packages of the
// rootfs directory: one component per installed dpkg package, with its
// pkg:deb PURL. The tree is read through sysroot, so links never leave it
// and FIFOs never block; a tree without a dpkg database or a recognisable
// Debian or Ubuntu os-release is an error naming the file.
func SBOM(ctx context.Context, rootfs string) ([]byte, error) {
	fsys, closer, err := sysroot.Open(rootfs)
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return SBOMFS(ctx, fsys)
}

// SBOMFS is SBOM over a tree already opened through sysroot: a disk
// image's filesystem, or the live host's "/". The document's root
// component is named by fsys.Root().
func SBOMFS(ctx context.Context, fsys sysroot.FS) ([]byte, error) {
	inv, err := readInventory(fsys)
	if err != nil {
		return nil, err
	}
	return encodeSBOM(ctx, inv, fsys.Root(), ftypes.TypeFilesystem, types.Metadata{})
}

// BakedSBOMFS is SBOMFS for the SBOM an image carries, made so that two
// builds of the same packages bake the same bytes: the root component is
// named "/" (not the directory the build read the tree through), the
// timestamp is at (the build's time, SOURCE_DATE_EPOCH in a reproducible
// build), and the serial number and the bom-refs trivy draws at random
// are derived from the document's content instead. CycloneDX asks for a
// serial number unique to each BOM; one derived from the content is unique
// to each distinct BOM, which is what reproducible builds need.
func BakedSBOMFS(ctx context.Context, fsys sysroot.FS, at time.Time) ([]byte, error) {
	inv, err := readInventory(fsys)
	if err != nil {
		return nil, err
	}
	bom, err := buildSBOM(ctx, inv, "/", ftypes.TypeFilesystem, types.Metadata{})
	if err != nil {
		return nil, err
	}
	if bom.Metadata != nil {
		bom.Metadata.Timestamp = at.UTC().Format(time.RFC3339)
	}
	stableRefs(bom)
	bom.SerialNumber = ""
	data, err := writeBOM(bom, "/")
	if err != nil {
		return nil, err
	}
	bom.SerialNumber = "urn:uuid:" + contentUUID(data)
	return writeBOM(bom, "/")
}

// uuidRE is a bom-ref trivy drew at random (it names components with no
// package URL that way: the root and the operating system).
var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// stableRefs replaces each random bom-ref with one derived from its
// component's type, name and version, in the components and in the
// dependency graph.
func stableRefs(bom *cdx.BOM) {
	refs := map[string]string{}
	used := map[string]bool{}
	fix := func(c *cdx.Component) {
		if c == nil || !uuidRE.MatchString(c.BOMRef) {
			return
		}
		seed := fmt.Sprintf("bom-ref\x00%s\x00%s\x00%s", c.Type, c.Name, c.Version)
		ref := contentUUID([]byte(seed))
		for i := 1; used[ref]; i++ {
			ref = contentUUID([]byte(fmt.Sprintf("%s\x00%d", seed, i)))
		}
		used[ref] = true
		refs[c.BOMRef] = ref
		c.BOMRef = ref
	}
	if bom.Metadata != nil {
		fix(bom.Metadata.Component)
	}
	if bom.Components != nil {
		for i := range *bom.Components {
			fix(&(*bom.Components)[i])
		}
	}
	if bom.Dependencies == nil {
		return
	}
	for i := range *bom.Dependencies {
		d := &(*bom.Dependencies)[i]
		if r, ok := refs[d.Ref]; ok {
			d.Ref = r
		}
		if d.Dependencies != nil {
			for j, on := range *d.Dependencies {
				if r, ok := refs[on]; ok {
					(*d.Dependencies)[j] = r
				}
			}
			slices.Sort(*d.Dependencies)
		}
	}
	// trivy sorted the graph by the random refs.
	slices.SortFunc(*bom.Dependencies, func(a, b cdx.Dependency) int { return strings.Compare(a.Ref, b.Ref) })
}

// contentUUID is a name-based UUID (version 5's layout, over SHA-256) of data.
func contentUUID(data []byte) string {
	h := sha256.Sum256(data)
	h[6] = h[6]&0x0f | 0x50
	h[8] = h[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}

// encodeSBOM has trivy turn an inventory into CycloneDX JSON. md carries
// image metadata for an image's root component; the OS is filled here.
func encodeSBOM(ctx context.Context, inv *inventory, name string, kind ftypes.ArtifactType, md types.Metadata) ([]byte, error) {
	bom, err := buildSBOM(ctx, inv, name, kind, md)
	if err != nil {
		return nil, err
	}
	return writeBOM(bom, name)
}

// buildSBOM has trivy turn an inventory into a CycloneDX document.
func buildSBOM(ctx context.Context, inv *inventory, name string, kind ftypes.ArtifactType, md types.Metadata) (*cdx.BOM, error) {
	md.OS = &inv.os
	report := types.Report{
		SchemaVersion: reportSchemaVersion,
		ArtifactName:  name,
		ArtifactType:  kind,
		Metadata:      md,
		Results: types.Results{{
			Target:   fmt.Sprintf("%s (%s %s)", name, inv.os.Family, inv.os.Name),
			Class:    types.ClassOSPkg,
			Type:     ftypes.TargetType(inv.os.Family),
			Packages: inv.pkgs,
		}},
	}
	m := cyclonedx.NewMarshaler(toolVersion)
	bom, err := m.MarshalReport(ctx, report)
	if err != nil {
		return nil, fmt.Errorf("building SBOM of %s: %w", name, err)
	}
	return bom, nil
}

// writeBOM encodes bom, the SBOM of name, as indented CycloneDX 1.6 JSON.
func writeBOM(bom *cdx.BOM, name string) ([]byte, error) {
	var buf bytes.Buffer
	enc := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON)
	enc.SetPretty(true)
	if err := enc.EncodeVersion(bom, cdx.SpecVersion1_6); err != nil {
		return nil, fmt.Errorf("encoding SBOM of %s: %w", name, err)
	}
	return buf.Bytes(), nil
}
