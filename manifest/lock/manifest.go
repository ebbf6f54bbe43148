package lock

import (
	"errors"
	"fmt"
	"strings"

	"github.com/gpuhost/gpuhost/manifest"
)

// FromManifest returns the lock of the image a baked manifest describes:
// its inventory with every .deb's sha256, the mirror or snapshot, and the
// digests of its apt sources and keyrings. A package the manifest records
// no sha256 for is an error naming it (every one, at once): a lock without
// hashes would not hold the build to anything.
func FromManifest(m *manifest.Manifest) (*Lock, error) {
	l := &Lock{Template: m.Build.Template, Mirror: m.Build.Mirror, Snapshot: m.Build.Snapshot}
	var missing []string
	var errs []error
	for _, p := range m.Packages {
		if p.SHA256 == "" {
			missing = append(missing, p.Name+"="+p.Version)
			continue
		}
		l.Packages = append(l.Packages, Package{Name: p.Name, Version: p.Version, Arch: p.Arch, SHA256: p.SHA256})
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("the manifest records no .deb sha256 for %d packages (%s); bake the image with a gpuhost-gpu provisioner that records them", len(missing), strings.Join(missing, ", ")))
	}
	if len(m.Packages) == 0 {
		errs = append(errs, errors.New("the manifest lists no packages"))
	}
	for _, f := range m.ConfigFiles {
		switch {
		case IsSource(f.Path):
			l.Sources = append(l.Sources, File{Path: f.Path, SHA256: f.SHA256})
		case IsKeyring(f.Path):
			l.Keyrings = append(l.Keyrings, File{Path: f.Path, SHA256: f.SHA256})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// What is written must read back: the manifest is checked by its own
	// schema only, and a value Parse refuses would make an unusable lock.
	back, err := Parse(l.Marshal())
	if err != nil {
		return nil, fmt.Errorf("the manifest holds values a lock cannot: %w", err)
	}
	return back, nil
}
