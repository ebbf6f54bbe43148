package packages

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

const (
	manifestPath = "/etc/gpuhost/manifest.json"
	// ManifestSchema is the schema value a baked manifest must carry.
	ManifestSchema = "gpuhost.manifest/v1"
	maxManifest    = 16 << 20
)

// CollectManifest reads the manifest the bake recorded in the image
// (gpuhost.manifest/v1), numbers kept exact. A target without one was not
// baked by gpuhost. It reads the target alone.
func CollectManifest(_ context.Context, env *collect.Env) (map[string]any, error) {
	data, err := env.FS.ReadFileLimit(manifestPath, maxManifest)
	if err != nil {
		if sysroot.IsNotExist(err) {
			return nil, collect.NotApplicable("no baked manifest at " + manifestPath)
		}
		return nil, fmt.Errorf("reading manifest: %w", err)
	}
	m, err := decodeManifest(data)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", env.FS.Display(manifestPath), err)
	}
	return m, nil
}

// decodeManifest keeps numbers as json.Number so that sizes and versions
// survive the round trip into the facts document exactly.
func decodeManifest(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after the JSON object")
	}
	if m == nil {
		return nil, errors.New("manifest is not a JSON object")
	}
	if s, _ := m["schema"].(string); s != ManifestSchema {
		return nil, fmt.Errorf("schema is %q, want %q", fmt.Sprint(m["schema"]), ManifestSchema)
	}
	return m, nil
}
