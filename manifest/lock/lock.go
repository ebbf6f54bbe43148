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
//
// Every field keeps to a rule (ValidName, ValidVersion, ValidArch,
// ValidSHA256, ValidPath, and the header's), and both Parse and Encode hold
// it to that rule: the values come from a manifest anyone who can write the
// image can write, and a value with a space or a newline in it would carry
// records of its own into the file.
package lock

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"pault.ag/go/debian/version"

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
	// nameRe is Debian policy's package name: two or more characters.
	nameRe    = regexp.MustCompile(`^[a-z0-9][a-z0-9+.-]+$`)
	versionRe = regexp.MustCompile(`^([0-9]+:)?[0-9][A-Za-z0-9.+~-]*$`)
	archRe    = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*$`)
	sha256Re  = regexp.MustCompile(`^[0-9a-f]{64}$`)
	// pathRe is narrower than what a file may be called: the build's plan
	// writes these paths unquoted into a here-document and compares them
	// as awk fields, so a path outside it is refused rather than escaped.
	pathRe = regexp.MustCompile(`^/[A-Za-z0-9._+@:/-]*$`)
	// templateRe and mirrorRe keep the header free of anything a shell or
	// apt would read specially, since builds render these values.
	templateRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	mirrorRe   = regexp.MustCompile(`^(https?|file)://[A-Za-z0-9._~:/?#\[\]@!$&'()*+,;=%-]+$`)
	snapshotRe = regexp.MustCompile(`^[0-9]{8}T[0-9]{6}Z$`)
)

// What each field must be, as errors say it. An error names a package or
// a path only once it has passed its rule, and never quotes a field that
// failed one: the input is untrusted, and its bytes in a message could
// pass for lines of their own.
const (
	nameRule     = "is not a Debian package name (two or more of a-z, 0-9, '+', '-' and '.', starting with a letter or digit)"
	versionRule  = "is not a Debian version"
	archRule     = "is not a Debian architecture (a-z, 0-9 and '-')"
	sha256Rule   = "is not 64 lower-case hex digits"
	pathRule     = "is not a clean absolute path of letters, digits and . _ + @ : / -"
	templateRule = "is not a name of letters, digits, '.', '_' and '-'"
	mirrorRule   = "is not an http, https or file URL of plain characters"
	snapshotRule = "is not a time such as 20250101T000000Z"
)

// ValidName says whether s can be a locked package's name.
func ValidName(s string) bool { return nameRe.MatchString(s) }

// ValidVersion says whether s can be a locked package's version: a version
// dpkg accepts, kept to the characters Debian policy allows.
func ValidVersion(s string) bool {
	// The pattern holds the characters; the parser holds the structure the
	// pattern cannot: an epoch dpkg can store, and a revision after a
	// hyphen that is not empty.
	if !versionRe.MatchString(s) || strings.HasSuffix(s, "-") {
		return false
	}
	v, err := version.Parse(s)
	return err == nil && v.Epoch <= math.MaxInt32
}

// ValidArch says whether s can be a locked package's architecture.
func ValidArch(s string) bool { return archRe.MatchString(s) }

// ValidSHA256 says whether s can be a lock's sha256.
func ValidSHA256(s string) bool { return sha256Re.MatchString(s) }

// ValidPath says whether s can be the path of a lock's source or keyring.
func ValidPath(s string) bool { return pathRe.MatchString(s) && path.Clean(s) == s }

// ValidTemplate says whether s can be a lock's template.
func ValidTemplate(s string) bool { return templateRe.MatchString(s) }

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

// maxProblems bounds the problems one error lists.
const maxProblems = 20

// Parse reads a lock file. Every problem is reported, each with its line
// number and what was wrong, never the line's content; a lock with any
// problem is refused whole.
func Parse(data []byte) (*Lock, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("larger than %d bytes", MaxSize)
	}
	p := &lockParser{l: &Lock{}, seenOnce: map[string]int{}, seenPath: map[string]int{}, seenPkg: map[string]int{}}
	header := false
	for i, raw := range bytes.Split(data, []byte("\n")) {
		n := i + 1
		if len(p.errs) >= maxProblems {
			p.errs = append(p.errs, errors.New("too many problems; stopping"))
			break
		}
		line := string(raw)
		f, ok := p.fields(n, line)
		if !ok {
			continue
		}
		if !header {
			if line != Schema {
				p.bad(n, "the first record must be %q", Schema)
				return nil, errors.Join(p.errs...)
			}
			header = true
			continue
		}
		p.record(n, f)
	}
	if !header && len(p.errs) == 0 {
		p.errs = append(p.errs, fmt.Errorf("no %q record: not a lock file", Schema))
	}
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	p.l.sort()
	return p.l, nil
}

// lockParser carries what Parse learns across lines: the lock so far, every
// problem found, and the line each record was first seen on, so a repeat
// can name the line it repeats.
type lockParser struct {
	l        *Lock
	errs     []error
	seenOnce map[string]int
	seenPath map[string]int
	seenPkg  map[string]int
}

// bad records a problem against a line number only, so no content of an
// untrusted lock ever reaches an error message.
func (p *lockParser) bad(n int, format string, args ...any) {
	p.errs = append(p.errs, fmt.Errorf("line %d: %s", n, fmt.Sprintf(format, args...)))
}

// fields enforces the lock's one canonical spelling of a line before any
// field is looked at, so two locks that mean the same thing are the same
// bytes. It reports false for a line to pass over: blank, a comment, or
// one already found bad.
func (p *lockParser) fields(n int, line string) ([]string, bool) {
	if len(line) > maxLine {
		p.bad(n, "longer than %d bytes", maxLine)
		return nil, false
	}
	if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
		return nil, false
	}
	if strings.ContainsAny(line, "\t\r\x00") || strings.Contains(line, "  ") || line != strings.TrimSpace(line) {
		p.bad(n, "fields are separated by one space, with no tabs, carriage returns or spaces at either end")
		return nil, false
	}
	if !printable(line) {
		p.bad(n, "holds a control character or a byte outside printable ASCII")
		return nil, false
	}
	return strings.Split(line, " "), true
}

// record checks a record's kind and field count once, so each kind's own
// reader can index its fields without checking again.
func (p *lockParser) record(n int, f []string) {
	want := map[string]int{"template": 2, "mirror": 2, "snapshot": 2, "source": 3, "keyring": 3, "package": 4}
	w, known := want[f[0]]
	switch {
	case !known:
		p.bad(n, "unknown record; want template, mirror, snapshot, source, keyring or package")
		return
	case len(f) != w:
		p.bad(n, "%s takes %d fields, not %d", f[0], w-1, len(f)-1)
		return
	}
	switch f[0] {
	case "template", "mirror", "snapshot":
		p.onceRecord(n, f)
	case "source", "keyring":
		p.fileRecord(n, f)
	case "package":
		p.packageRecord(n, f)
	}
}

// onceRecord reads the records a lock holds at most one of, which say where
// the build's inputs come from; a second would leave it ambiguous which one
// the lock pins.
func (p *lockParser) onceRecord(n int, f []string) {
	if prev, ok := p.seenOnce[f[0]]; ok {
		p.bad(n, "%s is given twice (first on line %d)", f[0], prev)
		return
	}
	p.seenOnce[f[0]] = n
	if msg := headerProblem(f[0], f[1]); msg != "" {
		p.bad(n, "%s", msg)
		return
	}
	*map[string]*string{"template": &p.l.Template, "mirror": &p.l.Mirror, "snapshot": &p.l.Snapshot}[f[0]] = f[1]
}

// fileRecord reads a source or keyring pin. Sources and keyrings share one
// set of paths, since both are files in the same tree and one path can hold
// only one content.
func (p *lockParser) fileRecord(n int, f []string) {
	file, sum := f[1], f[2]
	switch {
	case !ValidPath(file):
		p.bad(n, "the %s path %s", f[0], pathRule)
		return
	case !ValidSHA256(sum):
		p.bad(n, "%s %s: sha256 %s", f[0], file, sha256Rule)
		return
	}
	if prev, ok := p.seenPath[file]; ok {
		p.bad(n, "%s is listed twice (first on line %d)", file, prev)
		return
	}
	p.seenPath[file] = n
	if f[0] == "source" {
		p.l.Sources = append(p.l.Sources, File{Path: file, SHA256: sum})
	} else {
		p.l.Keyrings = append(p.l.Keyrings, File{Path: file, SHA256: sum})
	}
}

// packageRecord reads a package pin. A package may be pinned once per
// architecture, since a multi-arch image installs one build of each.
func (p *lockParser) packageRecord(n int, f []string) {
	name, ver, ok := strings.Cut(f[1], "=")
	arch, sum := f[2], f[3]
	switch {
	case !ValidName(name):
		p.bad(n, "the package name %s", nameRule)
		return
	case !ok:
		p.bad(n, "package %q is not name=version", name)
		return
	case !ValidVersion(ver):
		p.bad(n, "package %s: version %s", name, versionRule)
		return
	case !ValidArch(arch):
		p.bad(n, "package %s: architecture %s", name, archRule)
		return
	case !ValidSHA256(sum):
		p.bad(n, "package %s: sha256 %s", name, sha256Rule)
		return
	}
	key := name + ":" + arch
	if prev, ok := p.seenPkg[key]; ok {
		p.bad(n, "package %s (%s) is listed twice (first on line %d)", name, arch, prev)
		return
	}
	p.seenPkg[key] = n
	p.l.Packages = append(p.l.Packages, Package{Name: name, Version: ver, Arch: arch, SHA256: sum})
}

// printable says whether s holds only printable ASCII, space included.
func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < ' ' || s[i] > '~' {
			return false
		}
	}
	return true
}

// headerProblem says what is wrong with the value of a template, mirror or
// snapshot record, or "" when nothing is.
func headerProblem(kind, v string) string {
	switch kind {
	case "template":
		if !ValidTemplate(v) {
			return "the template " + templateRule
		}
	case "mirror":
		if !ValidMirror(v) {
			return "the mirror " + mirrorRule
		}
	case "snapshot":
		if !ValidSnapshot(v) {
			return "the snapshot " + snapshotRule
		}
	}
	return ""
}

// Validate holds l to what Parse holds a lock file to, field by field and
// record by record, so that what passes writes out as the records it holds
// and no others. Every problem is reported, up to a limit; a field that
// breaks its rule is named by its record's place, not quoted.
func (l *Lock) Validate() error {
	var errs []error
	bad := func(format string, args ...any) {
		if len(errs) < maxProblems {
			errs = append(errs, fmt.Errorf(format, args...))
		} else if len(errs) == maxProblems {
			errs = append(errs, errors.New("too many problems; stopping"))
		}
	}
	for _, h := range []struct{ kind, v string }{{"template", l.Template}, {"mirror", l.Mirror}, {"snapshot", l.Snapshot}} {
		if h.v == "" {
			continue
		}
		if msg := headerProblem(h.kind, h.v); msg != "" {
			bad("%s", msg)
		} else if len(h.kind)+1+len(h.v) > maxLine {
			bad("the %s record is longer than %d bytes", h.kind, maxLine)
		}
	}
	seenPath := map[string]bool{}
	for _, set := range []struct {
		kind  string
		files []File
	}{{"source", l.Sources}, {"keyring", l.Keyrings}} {
		for i, f := range set.files {
			switch {
			case !ValidPath(f.Path):
				bad("%s %d of %d: the path %s", set.kind, i+1, len(set.files), pathRule)
			case !ValidSHA256(f.SHA256):
				bad("%s %s: sha256 %s", set.kind, f.Path, sha256Rule)
			case seenPath[f.Path]:
				bad("%s is listed twice", f.Path)
			case len(set.kind)+len(f.Path)+len(f.SHA256)+2 > maxLine:
				bad("%s %s: the record is longer than %d bytes", set.kind, f.Path, maxLine)
			default:
				seenPath[f.Path] = true
			}
		}
	}
	seenPkg := map[string]bool{}
	for i, p := range l.Packages {
		switch {
		case !ValidName(p.Name):
			bad("package %d of %d: the name %s", i+1, len(l.Packages), nameRule)
		case !ValidVersion(p.Version):
			bad("package %s: version %s", p.Name, versionRule)
		case !ValidArch(p.Arch):
			bad("package %s: architecture %s", p.Name, archRule)
		case !ValidSHA256(p.SHA256):
			bad("package %s: sha256 %s", p.Name, sha256Rule)
		case seenPkg[p.Name+":"+p.Arch]:
			bad("package %s (%s) is listed twice", p.Name, p.Arch)
		case len("package")+len(p.Spec())+len(p.Arch)+len(p.SHA256)+3 > maxLine:
			bad("package %s (%s): the record is longer than %d bytes", p.Name, p.Arch, maxLine)
		default:
			seenPkg[p.Name+":"+p.Arch] = true
		}
	}
	return errors.Join(errs...)
}

func (l *Lock) sort() {
	byPath := func(a, b File) int { return strings.Compare(a.Path, b.Path) }
	slices.SortFunc(l.Sources, byPath)
	slices.SortFunc(l.Keyrings, byPath)
	slices.SortFunc(l.Packages, func(a, b Package) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Arch, b.Arch))
	})
}

// Encode writes the lock in its canonical form: a comment saying what the
// file is, the schema, then every record sorted. A lock Validate refuses,
// or one whose text would pass MaxSize, is refused whole, with nothing
// written; for any other, Parse(Encode(l)) gives back l, sorted.
func (l *Lock) Encode() ([]byte, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	b := l.marshal()
	if len(b) > MaxSize {
		return nil, fmt.Errorf("the lock would be larger than %d bytes", MaxSize)
	}
	return b, nil
}

func (l *Lock) marshal() []byte {
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
// without it, inv may be a part of the lock, as a bootstrap is. An
// inventory value that breaks its field's rule is shown quoted, so that it
// cannot add a line of its own to what a build reports.
func (l *Lock) Check(inv []Package, whole bool) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range inv {
		seen[p.Name+":"+p.Arch] = true
		want, ok := l.Find(p.Name, p.Arch)
		name, ver, arch := shown(p.Name, ValidName), shown(p.Version, ValidVersion), shown(p.Arch, ValidArch)
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("extra package %s (%s): installed at %s, not in the lock", name, arch, ver))
		case want.Version != p.Version:
			out = append(out, fmt.Sprintf("package %s (%s): installed at %s, the lock has %s", name, arch, ver, want.Version))
		case p.SHA256 != "" && want.SHA256 != p.SHA256:
			out = append(out, fmt.Sprintf("package %s=%s (%s): the .deb's sha256 is %s, the lock has %s", name, ver, arch, shown(p.SHA256, ValidSHA256), want.SHA256))
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

// shown is s as a message shows it: bare where valid says it keeps to its
// field's rule, Go-quoted where not.
func shown(s string, valid func(string) bool) string {
	if valid(s) {
		return s
	}
	return strconv.Quote(s)
}
