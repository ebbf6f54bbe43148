package trivy

import (
	"bytes"
	"context"
	"fmt"

	cdx "github.com/CycloneDX/cyclonedx-go"
	ftypes "github.com/aquasecurity/trivy/pkg/fanal/types"
	"github.com/aquasecurity/trivy/pkg/sbom/cyclonedx"
	"github.com/aquasecurity/trivy/pkg/types"

	"github.com/gpuhost/gpuhost/checks/sysroot"
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

// encodeSBOM has trivy turn an inventory into CycloneDX JSON. md carries
// image metadata for an image's root component; the OS is filled here.
func encodeSBOM(ctx context.Context, inv *inventory, name string, kind ftypes.ArtifactType, md types.Metadata) ([]byte, error) {
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
	var buf bytes.Buffer
	enc := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON)
	enc.SetPretty(true)
	if err := enc.EncodeVersion(bom, cdx.SpecVersion1_6); err != nil {
		return nil, fmt.Errorf("encoding SBOM of %s: %w", name, err)
	}
	return buf.Bytes(), nil
}
