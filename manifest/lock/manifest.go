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
	var p problems
	checkBuildHeader(m, &p)
	l := &Lock{Template: m.Build.Template, Mirror: m.Build.Mirror, Snapshot: m.Build.Snapshot}
	l.Packages = lockPackages(m, &p)
	l.Sources, l.Keyrings = lockAptFiles(m, &p)
	if err := errors.Join(p.errs...); err != nil {
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

// problems gathers what FromManifest finds wrong, up to a bound, so a
// manifest written to fail cannot make an error without end.
type problems struct{ errs []error }

// bad records one problem, and past the bound a single line saying the
// list stops there.
func (p *problems) bad(format string, args ...any) {
	if len(p.errs) < maxProblems {
		p.errs = append(p.errs, fmt.Errorf(format, args...))
	} else if len(p.errs) == maxProblems {
		p.errs = append(p.errs, errors.New("too many problems; stopping"))
	}
}

// checkBuildHeader holds the manifest's build fields to the rules the lock's
// own template, mirror and snapshot records keep, since they are copied
// into the lock as they are. An empty field is left out of the lock, not
// refused.
func checkBuildHeader(m *manifest.Manifest, p *problems) {
	for _, h := range []struct{ field, kind, v string }{
		{"build.template", "template", m.Build.Template},
		{"build.mirror", "mirror", m.Build.Mirror},
		{"build.snapshot", "snapshot", m.Build.Snapshot},
	} {
		if h.v == "" {
			continue
		}
		if msg := headerProblem(h.kind, h.v); msg != "" {
			p.bad("%s: %s", h.field, msg)
		}
	}
}

// lockPackages pins the manifest's inventory. Packages without a sha256
// are gathered into one problem that names them all, since they share one
// cause (an image baked without recording them) and one fix.
func lockPackages(m *manifest.Manifest, p *problems) []Package {
	var out []Package
	var missing []string
	seenPkg := map[string]int{}
	for i, pkg := range m.Packages {
		if !ValidName(pkg.Name) {
			p.bad("packages[%d]: the name %s", i, nameRule)
			continue
		}
		who := fmt.Sprintf("package %s (packages[%d])", pkg.Name, i)
		switch {
		case !ValidVersion(pkg.Version):
			p.bad("%s: version %s", who, versionRule)
			continue
		case !ValidArch(pkg.Arch):
			p.bad("%s: architecture %s", who, archRule)
			continue
		case pkg.SHA256 == "":
			missing = append(missing, pkg.Name+"="+pkg.Version)
			continue
		case !ValidSHA256(pkg.SHA256):
			p.bad("%s: sha256 %s", who, sha256Rule)
			continue
		}
		key := pkg.Name + ":" + pkg.Arch
		if prev, ok := seenPkg[key]; ok {
			p.bad("%s: %s (%s) is listed twice (first at packages[%d])", who, pkg.Name, pkg.Arch, prev)
			continue
		}
		seenPkg[key] = i
		out = append(out, Package{Name: pkg.Name, Version: pkg.Version, Arch: pkg.Arch, SHA256: pkg.SHA256})
	}
	if len(missing) > 0 {
		p.bad("the manifest records no .deb sha256 for %d packages (%s); bake the image with a gpuhost-gpu provisioner that records them", len(missing), strings.Join(missing, ", "))
	}
	if len(m.Packages) == 0 {
		p.bad("the manifest lists no packages")
	}
	return out
}

// lockAptFiles picks the apt sources and keyrings out of the manifest's
// config files: they decide where packages come from and whom apt trusts,
// so the lock pins them beside the packages. Other config files are not
// the lock's business.
func lockAptFiles(m *manifest.Manifest, p *problems) (sources, keyrings []File) {
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
			p.bad("config_files[%d]: the path of an apt file %s", i, pathRule)
			continue
		default:
			continue
		}
		if !ValidPath(f.Path) {
			p.bad("config_files[%d]: the path of an apt %s %s", i, kind, pathRule)
			continue
		}
		if !ValidSHA256(f.SHA256) {
			p.bad("config_files[%d] (%s): sha256 %s", i, f.Path, sha256Rule)
			continue
		}
		if prev, ok := seenPath[f.Path]; ok {
			p.bad("config_files[%d]: %s is listed twice (first at config_files[%d])", i, f.Path, prev)
			continue
		}
		seenPath[f.Path] = i
		if kind == "source" {
			sources = append(sources, File{Path: f.Path, SHA256: f.SHA256})
		} else {
			keyrings = append(keyrings, File{Path: f.Path, SHA256: f.SHA256})
		}
	}
	return sources, keyrings
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
