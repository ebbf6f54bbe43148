package lock

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/gpuhost/gpuhost/manifest"
)

// FromManifest returns the lock of the image a baked manifest describes:
// its inventory with every .deb's sha256, the mirror or snapshot, and the
// digests of its apt sources and keyrings. A package the manifest records
// no sha256 for is an error naming it (every one, at once): a lock without
// hashes would not hold the build to anything.
//
// The manifest is checked by its own schema only, and whoever can write
// to an image can write its manifest: every value that goes into the lock
// is held to its field's rule first, and a manifest with one that breaks
// it is refused whole. Errors name the field by its place in the manifest
// (packages[3], config_files[7], build.mirror), and a package by its name
// once the name has passed its rule, never quoting a value that failed.
func FromManifest(m *manifest.Manifest) (*Lock, error) {
	var errs []error
	bad := func(format string, args ...any) {
		if len(errs) < maxProblems {
			errs = append(errs, fmt.Errorf(format, args...))
		} else if len(errs) == maxProblems {
			errs = append(errs, errors.New("too many problems; stopping"))
		}
	}
	for _, h := range []struct{ field, kind, v string }{
		{"build.template", "template", m.Build.Template},
		{"build.mirror", "mirror", m.Build.Mirror},
		{"build.snapshot", "snapshot", m.Build.Snapshot},
	} {
		if h.v == "" {
			continue
		}
		if msg := headerProblem(h.kind, h.v); msg != "" {
			bad("%s: %s", h.field, msg)
		}
	}
	l := &Lock{Template: m.Build.Template, Mirror: m.Build.Mirror, Snapshot: m.Build.Snapshot}
	var missing []string
	seenPkg := map[string]int{}
	for i, p := range m.Packages {
		if !ValidName(p.Name) {
			bad("packages[%d]: the name %s", i, nameRule)
			continue
		}
		who := fmt.Sprintf("package %s (packages[%d])", p.Name, i)
		switch {
		case !ValidVersion(p.Version):
			bad("%s: version %s", who, versionRule)
			continue
		case !ValidArch(p.Arch):
			bad("%s: architecture %s", who, archRule)
			continue
		case p.SHA256 == "":
			missing = append(missing, p.Name+"="+p.Version)
			continue
		case !ValidSHA256(p.SHA256):
			bad("%s: sha256 %s", who, sha256Rule)
			continue
		}
		key := p.Name + ":" + p.Arch
		if prev, ok := seenPkg[key]; ok {
			bad("%s: %s (%s) is listed twice (first at packages[%d])", who, p.Name, p.Arch, prev)
			continue
		}
		seenPkg[key] = i
		l.Packages = append(l.Packages, Package{Name: p.Name, Version: p.Version, Arch: p.Arch, SHA256: p.SHA256})
	}
	if len(missing) > 0 {
		bad("the manifest records no .deb sha256 for %d packages (%s); bake the image with a gpuhost-gpu provisioner that records them", len(missing), strings.Join(missing, ", "))
	}
	if len(m.Packages) == 0 {
		bad("the manifest lists no packages")
	}
	seenPath := map[string]int{}
	for i, f := range m.ConfigFiles {
		kind := ""
		switch {
		case IsSource(f.Path):
			kind = "source"
		case IsKeyring(f.Path):
			kind = "keyring"
		case underAptDir(f.Path) && !ValidPath(f.Path):
			// A build records only what the patterns match, so such a path
			// was written by hand; leaving it out would hide it.
			bad("config_files[%d]: the path of an apt file %s", i, pathRule)
			continue
		default:
			continue
		}
		if !ValidPath(f.Path) {
			bad("config_files[%d]: the path of an apt %s %s", i, kind, pathRule)
			continue
		}
		if !ValidSHA256(f.SHA256) {
			bad("config_files[%d] (%s): sha256 %s", i, f.Path, sha256Rule)
			continue
		}
		if prev, ok := seenPath[f.Path]; ok {
			bad("config_files[%d]: %s is listed twice (first at config_files[%d])", i, f.Path, prev)
			continue
		}
		seenPath[f.Path] = i
		if kind == "source" {
			l.Sources = append(l.Sources, File{Path: f.Path, SHA256: f.SHA256})
		} else {
			l.Keyrings = append(l.Keyrings, File{Path: f.Path, SHA256: f.SHA256})
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// What is written must read back as these records and no others; the
	// checks above are per field, and Validate also holds each record to
	// the length Parse takes.
	if err := l.Validate(); err != nil {
		return nil, fmt.Errorf("the manifest holds values a lock cannot: %w", err)
	}
	l.sort()
	return l, nil
}

// underAptDir says whether name lies under a directory the source and
// keyring patterns look in.
func underAptDir(name string) bool {
	for _, p := range slices.Concat(SourcePatterns, KeyringPatterns) {
		if strings.HasPrefix(name, path.Dir(p)+"/") {
			return true
		}
	}
	return false
}
