// Package packages collects what is installed and what the image's build
// recorded about it: the dpkg database (packages, through the one parser
// of /var/lib/dpkg/status that vulnerability matching uses too), the
// CycloneDX SBOM the image carries (sbom) and the manifest gpuhost baked
// into it (manifest).
package packages

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/textfile"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

const (
	// DpkgStatusPath is dpkg's database of what is installed.
	DpkgStatusPath = "/var/lib/dpkg/status"
	// MaxDpkgStatus bounds the status file: a GPU image with CUDA carries a
	// few MiB; 64 MiB leaves room for the largest real systems.
	MaxDpkgStatus = 64 << 20
	// maxStanzas bounds the number of stanzas; Debian's whole archive has
	// fewer binary packages than this per architecture.
	maxStanzas = 200000
)

// ErrNoDpkg says the target has no dpkg database: not a Debian-family tree.
var ErrNoDpkg = errors.New("no dpkg database")

// CollectPackages reads the dpkg database: what is installed, at which
// version, and what is held. It reads the target alone, needing no other
// collector's facts.
func CollectPackages(_ context.Context, env *collect.Env) ([]facts.Package, error) {
	return readPackages(env.FS)
}

// readPackages reads and parses the dpkg database of fsys; absence is
// NotApplicable.
func readPackages(fsys sysroot.FS) ([]facts.Package, error) {
	all, err := ReadDpkgStatus(fsys)
	if errors.Is(err, ErrNoDpkg) {
		return nil, collect.NotApplicable("no dpkg database")
	}
	if err != nil {
		return nil, err
	}
	return factsOf(all), nil
}

// ReadDpkgStatus reads and parses the dpkg database of fsys, the one way
// the packages collector and vulnerability matching both read it, within
// one bound. A target without one is an error wrapping ErrNoDpkg.
func ReadDpkgStatus(fsys sysroot.FS) ([]DpkgPackage, error) {
	data, err := fsys.ReadFileLimit(DpkgStatusPath, MaxDpkgStatus)
	if err != nil {
		if sysroot.IsNotExist(err) {
			return nil, fmt.Errorf("%s: %w", fsys.Display(DpkgStatusPath), ErrNoDpkg)
		}
		return nil, fmt.Errorf("reading dpkg database: %w", err)
	}
	pkgs, err := ParseDpkgInstalled(data)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", fsys.Display(DpkgStatusPath), err)
	}
	return pkgs, nil
}

// Installed returns the package called name from pkgs. When several
// architectures are installed it returns the first in sort order, which is
// the one ParseDpkgStatus puts first.
func Installed(pkgs []facts.Package, name string) (facts.Package, bool) {
	for _, p := range pkgs {
		if p.Name == name {
			return p, true
		}
	}
	return facts.Package{}, false
}

// stanza is the fields of one dpkg status paragraph that matter here.
type stanza struct {
	line                               int
	pkg, status, ver, arch, src, maint string
	hasPkg, hasStatus                  bool
}

// DpkgPackage is one installed package of a dpkg status file, with what
// vulnerability matching needs beyond the facts.
type DpkgPackage struct {
	facts.Package
	// Source is the Source field, "name" or "name (version)"; empty when
	// the source package is the binary one at its version.
	Source string
	// Maintainer is the Maintainer field.
	Maintainer string
}

// ParseDpkgStatus parses the text of /var/lib/dpkg/status into the
// installed packages, as ParseDpkgInstalled does, for the facts.
func ParseDpkgStatus(data []byte) ([]facts.Package, error) {
	all, err := ParseDpkgInstalled(data)
	if err != nil {
		return nil, err
	}
	return factsOf(all), nil
}

// factsOf keeps what the facts say of each package.
func factsOf(all []DpkgPackage) []facts.Package {
	pkgs := make([]facts.Package, len(all))
	for i, p := range all {
		pkgs[i] = p.Package
	}
	return pkgs
}

// ParseDpkgInstalled is the one parser of /var/lib/dpkg/status: the scan's
// collectors and the vulnerability matching both read packages through it,
// so they cannot disagree on what is installed. It returns the packages
// dpkg has installed ("ok installed", whatever the selection; Held when
// the selection is hold, which is what apt-mark hold sets), sorted by name
// then architecture. It is strict: binary data, a line that is neither a
// field nor a continuation, a paragraph without Package, a repeated field
// or package, or more than 200,000 paragraphs is an error naming the line,
// because a status file that dpkg itself would reject cannot be trusted to
// describe the system.
func ParseDpkgInstalled(data []byte) ([]DpkgPackage, error) {
	p := &dpkgParser{pkgs: []DpkgPackage{}, seen: map[[2]string]int{}, fields: map[string]bool{}}
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if err := textfile.CheckLine(line); err != nil {
			return nil, fmt.Errorf("line %d: %w", lineNo, err)
		}
		if err := p.line(lineNo, line); err != nil {
			return nil, err
		}
	}
	if err := p.finish(); err != nil {
		return nil, err
	}
	slices.SortFunc(p.pkgs, func(a, b DpkgPackage) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Arch, b.Arch))
	})
	return p.pkgs, nil
}

// dpkgParser is what ParseDpkgInstalled carries from line to line: the
// packages so far and where each was listed, so a repeat names the first,
// and the paragraph being read with the fields it has already given.
type dpkgParser struct {
	pkgs []DpkgPackage
	seen map[[2]string]int
	// cur is the paragraph being read; nil between paragraphs.
	cur    *stanza
	fields map[string]bool
	// field is the field continuation lines belong to.
	field   string
	stanzas int
}

// line reads one line of a status file: a blank line ends a paragraph, an
// indented one continues the field before it (whose value nothing here
// needs), and any other must be a field.
func (p *dpkgParser) line(lineNo int, line []byte) error {
	if len(bytes.TrimSpace(line)) == 0 {
		if err := p.finish(); err != nil {
			return err
		}
		p.field = ""
		return nil
	}
	if line[0] == ' ' || line[0] == '\t' {
		if p.cur == nil || p.field == "" {
			return fmt.Errorf("line %d: continuation line outside a field", lineNo)
		}
		return nil
	}
	name, value, ok := bytes.Cut(line, []byte(":"))
	if !ok {
		return fmt.Errorf("line %d: not a field (no colon)", lineNo)
	}
	if !validFieldName(name) {
		return fmt.Errorf("line %d: invalid field name %q", lineNo, textfile.Truncate(string(name), 40))
	}
	return p.setField(lineNo, name, string(bytes.TrimSpace(value)))
}

// setField keeps the value of a field the packages are built from. The
// first field of a paragraph opens it, which is where the bound on the
// number of paragraphs is enforced, before the paragraph costs anything.
func (p *dpkgParser) setField(lineNo int, name []byte, v string) error {
	if p.cur == nil {
		p.stanzas++
		if p.stanzas > maxStanzas {
			return fmt.Errorf("line %d: more than %d paragraphs", lineNo, maxStanzas)
		}
		p.cur = &stanza{line: lineNo}
	}
	p.field = strings.ToLower(string(name))
	if p.fields[p.field] {
		return fmt.Errorf("line %d: field %s repeated in one paragraph", lineNo, name)
	}
	p.fields[p.field] = true
	switch p.field {
	case "package":
		if v == "" || strings.ContainsAny(v, " \t") {
			return fmt.Errorf("line %d: invalid package name %q", lineNo, textfile.Truncate(v, 40))
		}
		p.cur.pkg, p.cur.hasPkg = v, true
	case "status":
		p.cur.status, p.cur.hasStatus = v, true
	case "version":
		p.cur.ver = v
	case "architecture":
		p.cur.arch = v
	case "source":
		p.cur.src = v
	case "maintainer":
		p.cur.maint = v
	}
	return nil
}

// finish judges the paragraph just read once all its fields are known,
// since Status and Version may come in any order: it keeps the package
// only if dpkg has it installed, and refuses a paragraph dpkg would not
// have written.
func (p *dpkgParser) finish() error {
	if p.cur == nil {
		return nil
	}
	s := p.cur
	p.cur = nil
	clear(p.fields)
	if !s.hasPkg {
		return fmt.Errorf("line %d: paragraph has no Package field", s.line)
	}
	if !s.hasStatus {
		return fmt.Errorf("line %d: package %s has no Status field", s.line, s.pkg)
	}
	st := strings.Fields(s.status)
	if len(st) != 3 {
		return fmt.Errorf("line %d: package %s: malformed Status %q", s.line, s.pkg, s.status)
	}
	want, flag, state := st[0], st[1], st[2]
	if state != "installed" || flag != "ok" {
		return nil
	}
	if s.ver == "" {
		return fmt.Errorf("line %d: installed package %s has no Version", s.line, s.pkg)
	}
	key := [2]string{s.pkg, s.arch}
	if prev, dup := p.seen[key]; dup {
		return fmt.Errorf("line %d: package %s:%s already listed at line %d", s.line, s.pkg, s.arch, prev)
	}
	p.seen[key] = s.line
	p.pkgs = append(p.pkgs, DpkgPackage{Package: facts.Package{Name: s.pkg, Version: s.ver, Arch: s.arch, Held: want == "hold", Line: s.line},
		Source: s.src, Maintainer: s.maint})
	return nil
}

// validFieldName follows deb822: printable ASCII other than colon and space,
// not starting with '#' or '-'.
func validFieldName(name []byte) bool {
	if len(name) == 0 || name[0] == '#' || name[0] == '-' {
		return false
	}
	for _, c := range name {
		if c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}
