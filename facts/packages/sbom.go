package packages

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

const (
	// SBOMPath is where an image carries its CycloneDX SBOM: written at bake
	// time from the finished rootfs, so that the SBOM travels with the
	// image and a host can show what it was built from.
	SBOMPath = "/var/lib/gpuhost/sbom.cdx.json"
	// maxSBOM bounds the SBOM read: a CUDA image's is a few MiB.
	maxSBOM = 64 << 20
)

// CollectSBOM says whether the target carries a CycloneDX SBOM at
// SBOMPath, and what it says of itself. A missing SBOM is a fact
// (present: false); one that is not a CycloneDX JSON document is an error
// naming the file, since a policy must not count it as present. It reads
// the target alone.
func CollectSBOM(_ context.Context, env *collect.Env) (*facts.SBOM, error) {
	out := &facts.SBOM{Path: SBOMPath}
	data, err := env.FS.ReadFileLimit(SBOMPath, maxSBOM)
	if err != nil {
		if sysroot.IsNotExist(err) {
			return out, nil
		}
		return nil, fmt.Errorf("reading %s: %w", env.FS.Display(SBOMPath), err)
	}
	var doc struct {
		BOMFormat   string            `json:"bomFormat"`
		SpecVersion string            `json:"specVersion"`
		Components  []json.RawMessage `json:"components"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", env.FS.Display(SBOMPath), err)
	}
	if doc.BOMFormat != "CycloneDX" {
		return nil, fmt.Errorf("parsing %s: bomFormat is %q, not CycloneDX", env.FS.Display(SBOMPath), doc.BOMFormat)
	}
	sum := sha256.Sum256(data)
	out.Present = true
	out.Format = doc.BOMFormat
	out.SpecVersion = doc.SpecVersion
	out.Components = len(doc.Components)
	out.SHA256 = hex.EncodeToString(sum[:])
	return out, nil
}
