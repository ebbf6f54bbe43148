// Package lock is the gpuhost lock file, gpuhost.lock/v1: every package an
// image holds at its exact version and architecture with the sha256 of its
// .deb, the mirror or snapshot it came from, and the digests of the apt
// sources and keyrings it trusted. `gpuhost lock --from MANIFEST` writes one
// from a baked manifest; a build given `lock_file` installs exactly that set
// and fails, naming the package, on any difference.
//
// The format is a line format, so that a change of one package is a change
// of one line in review:
//
//	# comments and blank lines are ignored
//	gpuhost.lock/v1
//	template debian-12-gpu
//	mirror http://mirror.example/debian
//	snapshot 20250101T000000Z
//	source /etc/apt/sources.list.d/debian.sources <sha256>
//	keyring /usr/share/keyrings/debian-archive-keyring.gpg <sha256>
//	package adduser=3.134 all <sha256>
//
// The first record is the schema line; the others may come in any order
// (Marshal writes them sorted: the header records, then sources, keyrings
// and packages by path or name). Fields are separated by one space and never
// contain one. template, mirror and snapshot appear at most once; a path, or
// a package's name and architecture, at most once. Every sha256 is 64
// lower-case hex digits.
package lock

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/gpuhost/gpuhost/internal/userfile"
)

// Schema is the first record of every lock file.
const Schema = "gpuhost.lock/v1"

// MaxSize bounds a lock file: a CUDA image holds a few thousand packages,
// each a line of about 150 bytes.
const MaxSize = 8 << 20

// maxLine bounds one record.
const maxLine = 4096

// Lock is a parsed lock file.
type Lock struct {
	// Template is the template the locked image was built from.
	Template string
	// Mirror is the package mirror the image came from.
	Mirror string
	// Snapshot is the archive snapshot the image came from.
	Snapshot string
	// Sources are the apt source lists and preferences, by path.
	Sources []File
	// Keyrings are the keyrings apt trusts, by path.
	Keyrings []File
	// Packages are every installed package, by name and architecture.
	Packages []Package
}

// File is the digest of one file in the image.
type File struct {
	// Path is the absolute path inside the image.
	Path string
	// SHA256 is the hex sha256 of its bytes.
	SHA256 string
}

// Package is one installed package.
type Package struct {
	// Name is the package name.
	Name string
	// Version is the exact version, epoch included.
	Version string
	// Arch is the package's architecture, such as amd64 or all.
	Arch string
	// SHA256 is the hex sha256 of the .deb, as apt's Packages index gives
	// it and the downloaded file hashes to.
	SHA256 string
}

// Spec is name=version, as apt-get install takes it.
func (p Package) Spec() string { return p.Name + "=" + p.Version }

var (
	nameRe    = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]*$`)
	versionRe = regexp.MustCompile(`^([0-9]+:)?[0-9][A-Za-z0-9.+~-]*$`)
	archRe    = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	sha256Re  = regexp.MustCompile(`^[0-9a-f]{64}$`)
	pathRe    = regexp.MustCompile(`^/[A-Za-z0-9._+@:/-]*$`)
	// templateRe and mirrorRe keep the header free of anything a shell or
	// apt would read specially, since builds render these values.
	templateRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	mirrorRe   = regexp.MustCompile(`^(https?|file)://[A-Za-z0-9._~:/?#\[\]@!$&'()*+,;=%-]+$`)
	snapshotRe = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z$`)
)

// ValidMirror says whether s can be a lock's mirror.
func ValidMirror(s string) bool { return mirrorRe.MatchString(s) }

// ValidSnapshot says whether s can be a lock's snapshot.
func ValidSnapshot(s string) bool { return snapshotRe.MatchString(s) }

// ReadFile reads and parses the lock file at name. Its errors name the file.
func ReadFile(name string) (*Lock, error) {
	data, err := userfile.Read(name, MaxSize)
	if err != nil {
		return nil, fmt.Errorf("reading lock file %q: %w", name, err)
	}
	l, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("parsing lock file %q: %w", name, err)
	}
	return l, nil
}

// Parse reads a lock file. Every problem is reported, each with its line
// number; a lock with any problem is refused whole.
func Parse(data []byte) (*Lock, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("larger than %d bytes", MaxSize)
	}
	l := &Lock{}
	var errs []error
	bad := func(n int, format string, args ...any) {
		errs = append(errs, fmt.Errorf("line %d: %s", n, fmt.Sprintf(format, args...)))
	}
	header := false
	seenOnce := map[string]int{}
	seenPath := map[string]int{}
	seenPkg := map[string]int{}
	for i, raw := range bytes.Split(data, []byte("\n")) {
		n := i + 1
		if len(errs) >= 20 {
			errs = append(errs, errors.New("too many problems; stopping"))
			break
		}
		line := string(raw)
		if len(line) > maxLine {
			bad(n, "longer than %d bytes", maxLine)
			continue
		}
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.ContainsAny(line, "\t\r\x00") || strings.Contains(line, "  ") || line != strings.TrimSpace(line) {
			bad(n, "fields are separated by one space, with no tabs, carriage returns or spaces at either end")
			continue
		}
		f := strings.Split(line, " ")
		if !header {
			if line != Schema {
				bad(n, "the first record must be %q, not %q", Schema, clip(line))
				return nil, errors.Join(errs...)
			}
			header = true
			continue
		}
		want := map[string]int{"template": 2, "mirror": 2, "snapshot": 2, "source": 3, "keyring": 3, "package": 4}
		w, known := want[f[0]]
		switch {
		case !known:
			bad(n, "unknown record %q; want template, mirror, snapshot, source, keyring or package", clip(f[0]))
			continue
		case len(f) != w:
			bad(n, "%s takes %d fields, not %d", f[0], w-1, len(f)-1)
			continue
		}
		switch f[0] {
		case "template", "mirror", "snapshot":
			if prev, ok := seenOnce[f[0]]; ok {
				bad(n, "%s is given twice (first on line %d)", f[0], prev)
				continue
			}
			seenOnce[f[0]] = n
			re := map[string]*regexp.Regexp{"template": templateRe, "mirror": mirrorRe, "snapshot": snapshotRe}[f[0]]
			if !re.MatchString(f[1]) {
				bad(n, "%s %q is not valid", f[0], clip(f[1]))
				continue
			}
			*map[string]*string{"template": &l.Template, "mirror": &l.Mirror, "snapshot": &l.Snapshot}[f[0]] = f[1]
		case "source", "keyring":
			p, sum := f[1], f[2]
			switch {
			case !pathRe.MatchString(p) || path.Clean(p) != p:
				bad(n, "%s path %q is not a clean absolute path", f[0], clip(p))
				continue
			case !sha256Re.MatchString(sum):
				bad(n, "%s %s: sha256 %q is not 64 lower-case hex digits", f[0], p, clip(sum))
				continue
			}
			if prev, ok := seenPath[p]; ok {
				bad(n, "%s is listed twice (first on line %d)", p, prev)
				continue
			}
			seenPath[p] = n
			if f[0] == "source" {
				l.Sources = append(l.Sources, File{Path: p, SHA256: sum})
			} else {
				l.Keyrings = append(l.Keyrings, File{Path: p, SHA256: sum})
			}
		case "package":
			name, version, ok := strings.Cut(f[1], "=")
			arch, sum := f[2], f[3]
			switch {
			case !ok || !nameRe.MatchString(name):
				bad(n, "package %q is not name=version", clip(f[1]))
				continue
			case !versionRe.MatchString(version):
				bad(n, "package %s: version %q is not a Debian version", name, clip(version))
				continue
			case !archRe.MatchString(arch):
				bad(n, "package %s: architecture %q is not valid", name, clip(arch))
				continue
			case !sha256Re.MatchString(sum):
				bad(n, "package %s: sha256 %q is not 64 lower-case hex digits", name, clip(sum))
				continue
			}
			key := name + ":" + arch
			if prev, ok := seenPkg[key]; ok {
				bad(n, "package %s (%s) is listed twice (first on line %d)", name, arch, prev)
				continue
			}
			seenPkg[key] = n
			l.Packages = append(l.Packages, Package{Name: name, Version: version, Arch: arch, SHA256: sum})
		}
	}
	if !header && len(errs) == 0 {
		errs = append(errs, fmt.Errorf("no %q record: not a lock file", Schema))
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	l.sort()
	return l, nil
}

// clip shortens a value quoted in an error: the input is untrusted.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

func (l *Lock) sort() {
	byPath := func(a, b File) int { return strings.Compare(a.Path, b.Path) }
	slices.SortFunc(l.Sources, byPath)
	slices.SortFunc(l.Keyrings, byPath)
	slices.SortFunc(l.Packages, func(a, b Package) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Arch, b.Arch))
	})
}

// Marshal writes the lock in its canonical form: a comment saying what the
// file is, the schema, then every record sorted. Parse(Marshal(l)) gives
// back l, for any l that Parse returned.
func (l *Lock) Marshal() []byte {
	c := *l
	c.Sources, c.Keyrings, c.Packages = slices.Clone(l.Sources), slices.Clone(l.Keyrings), slices.Clone(l.Packages)
	c.sort()
	var b bytes.Buffer
	b.WriteString("# gpuhost lock file: every package of the image at its exact version, with\n")
	b.WriteString("# the sha256 of its .deb, and the apt sources and keyrings it trusted.\n")
	b.WriteString("# Written by `gpuhost lock --from MANIFEST`; review a change like code.\n")
	b.WriteString(Schema + "\n")
	for _, h := range []struct{ k, v string }{{"template", c.Template}, {"mirror", c.Mirror}, {"snapshot", c.Snapshot}} {
		if h.v != "" {
			fmt.Fprintf(&b, "%s %s\n", h.k, h.v)
		}
	}
	for _, f := range c.Sources {
		fmt.Fprintf(&b, "source %s %s\n", f.Path, f.SHA256)
	}
	for _, f := range c.Keyrings {
		fmt.Fprintf(&b, "keyring %s %s\n", f.Path, f.SHA256)
	}
	for _, p := range c.Packages {
		fmt.Fprintf(&b, "package %s %s %s\n", p.Spec(), p.Arch, p.SHA256)
	}
	return b.Bytes()
}

// Find returns the locked package name of architecture arch.
func (l *Lock) Find(name, arch string) (Package, bool) {
	i, ok := slices.BinarySearchFunc(l.Packages, Package{Name: name, Arch: arch}, func(a, b Package) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Arch, b.Arch))
	})
	if !ok {
		return Package{}, false
	}
	return l.Packages[i], true
}

// SourcePatterns are the files apt resolves packages against: what the
// lock's source records hold. KeyringPatterns are the keyrings it trusts.
// Both are among the files the baked manifest digests.
var (
	SourcePatterns  = []string{"/etc/apt/sources.list", "/etc/apt/sources.list.d/*", "/etc/apt/preferences", "/etc/apt/preferences.d/*"}
	KeyringPatterns = []string{"/etc/apt/trusted.gpg", "/etc/apt/trusted.gpg.d/*", "/etc/apt/keyrings/*", "/usr/share/keyrings/*"}
)

// matchAny says whether name matches one of patterns.
func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// IsSource says whether the file at name is one a source record holds.
func IsSource(name string) bool { return matchAny(SourcePatterns, name) }

// IsKeyring says whether the file at name is one a keyring record holds.
func IsKeyring(name string) bool { return matchAny(KeyringPatterns, name) }

// Check compares an inventory with the lock and returns one line per
// difference, each naming the package: a package the lock does not hold
// (an extra), one at another version, and one whose .deb hashes to another
// sha256 (an inventory entry with no SHA256 is checked by version only).
// With whole set, a locked package missing from inv is a difference too;
// without it, inv may be a part of the lock, as a bootstrap is.
func (l *Lock) Check(inv []Package, whole bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range inv {
		seen[p.Name+":"+p.Arch] = true
		want, ok := l.Find(p.Name, p.Arch)
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("extra package %s (%s): installed at %s, not in the lock", p.Name, p.Arch, p.Version))
		case want.Version != p.Version:
			out = append(out, fmt.Sprintf("package %s (%s): installed at %s, the lock has %s", p.Name, p.Arch, p.Version, want.Version))
		case p.SHA256 != "" && want.SHA256 != p.SHA256:
			out = append(out, fmt.Sprintf("package %s=%s (%s): the .deb's sha256 is %s, the lock has %s", p.Name, p.Version, p.Arch, p.SHA256, want.SHA256))
		}
	}
	if whole {
		for _, p := range l.Packages {
			if !seen[p.Name+":"+p.Arch] {
				out = append(out, fmt.Sprintf("missing package %s=%s (%s): in the lock, not installed", p.Name, p.Version, p.Arch))
			}
		}
	}
	slices.Sort(out)
	return out
}
