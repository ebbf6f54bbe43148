package trivy

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	ftypes "github.com/aquasecurity/trivy/pkg/fanal/types"
	"github.com/aquasecurity/trivy/pkg/purl"
	"github.com/aquasecurity/trivy/pkg/types"
	debversion "github.com/knqyf263/go-deb-version"

	"github.com/gpuhost/gpuhost/checks/sysroot"
)

// The only files trivy is told about. Trivy's own filesystem walker would
// follow the target's symlinks and open its FIFOs, so we read these few
// through sysroot and hand trivy the parsed result instead.
const (
	dpkgStatusFile = "/var/lib/dpkg/status"
	osReleaseFile  = "/etc/os-release"
	osReleaseAlt   = "/usr/lib/os-release"
)

const (
	// maxStatusSize bounds /var/lib/dpkg/status: a CUDA image carries a few
	// MiB, and 64 MiB leaves room for the largest real systems.
	maxStatusSize = 64 << 20
	// maxOSReleaseSize bounds os-release, a file of a dozen short lines.
	maxOSReleaseSize = 64 << 10
	// maxParagraphs bounds the packages read; Debian's whole archive has
	// fewer binary packages per architecture.
	maxParagraphs = 200000
	// maxLine bounds one status line; real Description lines are short and a
	// megabyte line is garbage.
	maxLine = 1 << 20
)

var (
	// errNoDpkg says the target has no dpkg database: not a Debian-family tree.
	errNoDpkg = errors.New("no dpkg database")
	// errNoOSRelease says the target has no os-release at all.
	errNoOSRelease = errors.New("no os-release")
	// errUnsupportedOS says os-release names a distribution trivy is not
	// asked to match here.
	errUnsupportedOS = errors.New("unsupported distribution")
)

// inventory is what trivy needs to know about a target: its distribution
// and its installed OS packages.
type inventory struct {
	os   ftypes.OS
	pkgs []ftypes.Package
}

// readInventory reads os-release and the dpkg status of fsys. Absent dpkg
// status is errNoDpkg, wrapped with the file name.
func readInventory(fsys sysroot.FS) (*inventory, error) {
	osr, err := readOSRelease(fsys)
	if err != nil {
		return nil, err
	}
	data, err := fsys.ReadFileLimit(dpkgStatusFile, maxStatusSize)
	if err != nil {
		if sysroot.IsNotExist(err) {
			return nil, fmt.Errorf("%s: %w", fsys.Display(dpkgStatusFile), errNoDpkg)
		}
		return nil, fmt.Errorf("reading %s: %w", fsys.Display(dpkgStatusFile), err)
	}
	pkgs, err := parseStatus(data)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", fsys.Display(dpkgStatusFile), err)
	}
	inv := &inventory{os: osr, pkgs: pkgs}
	inv.identify()
	return inv, nil
}

// identify gives every package the PURL and UID that trivy's SBOM encoder
// keys components by.
func (inv *inventory) identify() {
	md := types.Metadata{OS: &inv.os}
	for i := range inv.pkgs {
		p := &inv.pkgs[i]
		if u, err := purl.New(ftypes.TargetType(inv.os.Family), md, *p); err == nil && u != nil {
			p.Identifier.PURL = u.Unwrap()
		}
		p.Identifier.UID = p.ID + ":" + p.Arch
	}
}

// readOSRelease finds the distribution: /etc/os-release, else
// /usr/lib/os-release, as os-release(5) says.
func readOSRelease(fsys sysroot.FS) (ftypes.OS, error) {
	name := osReleaseFile
	data, err := fsys.ReadFileLimit(name, maxOSReleaseSize)
	if sysroot.IsNotExist(err) {
		name = osReleaseAlt
		data, err = fsys.ReadFileLimit(name, maxOSReleaseSize)
	}
	if sysroot.IsNotExist(err) {
		return ftypes.OS{}, fmt.Errorf("%s: %w", fsys.Display(osReleaseFile), errNoOSRelease)
	}
	if err != nil {
		return ftypes.OS{}, fmt.Errorf("reading os-release: %w", err)
	}
	osr, err := parseOSRelease(data)
	if err != nil {
		return ftypes.OS{}, fmt.Errorf("parsing %s: %w", fsys.Display(name), err)
	}
	return osr, nil
}

// parseOSRelease maps os-release onto trivy's OS. Only the Debian family is
// supported: gpuhost bakes Ubuntu and Debian, and dpkg is the only package
// database read here.
func parseOSRelease(data []byte) (ftypes.OS, error) {
	if !utf8.Valid(data) || bytes.IndexByte(data, 0) >= 0 {
		return ftypes.OS{}, errors.New("not text")
	}
	kv := map[string]string{}
	for line := range strings.SplitSeq(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			continue
		}
		kv[k] = unquote(v)
	}
	id := strings.ToLower(kv["ID"])
	family := ftypes.OSType("")
	for _, cand := range append([]string{id}, strings.Fields(strings.ToLower(kv["ID_LIKE"]))...) {
		if cand == string(ftypes.Debian) || cand == string(ftypes.Ubuntu) {
			family = ftypes.OSType(cand)
			break
		}
	}
	if family == "" {
		return ftypes.OS{}, fmt.Errorf("%w %q: want debian or ubuntu", errUnsupportedOS, id)
	}
	ver := kv["VERSION_ID"]
	if ver == "" {
		return ftypes.OS{}, errors.New("no VERSION_ID")
	}
	return ftypes.OS{Family: family, Name: ver}, nil
}

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
		v = v[1 : len(v)-1]
	}
	return strings.ReplaceAll(v, `\"`, `"`)
}

// paragraph holds the status fields trivy's Debian matching needs.
type paragraph struct {
	line                               int
	pkg, status, ver, arch, src, maint string
}

// parseStatus parses dpkg's status file into trivy packages: those whose
// Status is "<want> ok installed", sorted by name and architecture. Unlike
// trivy's own parser it refuses what dpkg would refuse (binary data, a
// paragraph without Package, a bad version, too many paragraphs), naming the
// line, because a database that lies about versions hides vulnerabilities.
func parseStatus(data []byte) ([]ftypes.Package, error) {
	if bytes.IndexByte(data, 0) >= 0 {
		return nil, errors.New("binary data in status file")
	}
	var (
		pkgs  []ftypes.Package
		cur   *paragraph
		count int
		field string
	)
	flush := func() error {
		if cur == nil {
			return nil
		}
		p := cur
		cur, field = nil, ""
		pkg, ok, err := p.toPackage()
		if err != nil {
			return fmt.Errorf("line %d: %w", p.line, err)
		}
		if ok {
			pkgs = append(pkgs, pkg)
		}
		return nil
	}
	lineNo := 0
	for len(data) > 0 {
		lineNo++
		var line []byte
		line, data, _ = bytes.Cut(data, []byte("\n"))
		if len(line) > maxLine {
			return nil, fmt.Errorf("line %d: longer than %d bytes", lineNo, maxLine)
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		if len(bytes.TrimSpace(line)) == 0 {
			if err := flush(); err != nil {
				return nil, err
			}
			continue
		}
		if line[0] == ' ' || line[0] == '\t' {
			if field == "" {
				return nil, fmt.Errorf("line %d: continuation line outside a field", lineNo)
			}
			continue // only single-line fields matter here
		}
		k, v, ok := bytes.Cut(line, []byte(":"))
		if !ok || len(k) == 0 {
			return nil, fmt.Errorf("line %d: not a field", lineNo)
		}
		if cur == nil {
			count++
			if count > maxParagraphs {
				return nil, fmt.Errorf("line %d: more than %d paragraphs", lineNo, maxParagraphs)
			}
			cur = &paragraph{line: lineNo}
		}
		field = strings.ToLower(string(k))
		val := strings.TrimSpace(string(v))
		switch field {
		case "package":
			cur.pkg = val
		case "status":
			cur.status = val
		case "version":
			cur.ver = val
		case "architecture":
			cur.arch = val
		case "source":
			cur.src = val
		case "maintainer":
			cur.maint = val
		}
	}
	if err := flush(); err != nil {
		return nil, err
	}
	// dpkg writes the file sorted, so this is usually a linear pass.
	slices.SortFunc(pkgs, func(a, b ftypes.Package) int {
		return cmp.Or(strings.Compare(a.Name, b.Name), strings.Compare(a.Arch, b.Arch))
	})
	for i := 1; i < len(pkgs); i++ {
		if pkgs[i].Name == pkgs[i-1].Name && pkgs[i].Arch == pkgs[i-1].Arch {
			return nil, fmt.Errorf("package %s:%s listed twice", pkgs[i].Name, pkgs[i].Arch)
		}
	}
	return pkgs, nil
}

// toPackage returns the trivy package of an installed paragraph; ok is false
// for packages that are not installed (removed, config-files, half-done).
func (p *paragraph) toPackage() (ftypes.Package, bool, error) {
	if p.pkg == "" {
		return ftypes.Package{}, false, errors.New("paragraph has no Package field")
	}
	st := strings.Fields(p.status)
	if len(st) != 3 || st[1] != "ok" || st[2] != "installed" {
		return ftypes.Package{}, false, nil
	}
	if p.ver == "" {
		return ftypes.Package{}, false, fmt.Errorf("installed package %s has no Version", p.pkg)
	}
	v, err := debversion.NewVersion(p.ver)
	if err != nil {
		return ftypes.Package{}, false, fmt.Errorf("package %s: version %q: %w", p.pkg, p.ver, err)
	}
	pkg := ftypes.Package{
		ID:         p.pkg + "@" + p.ver,
		Name:       p.pkg,
		Version:    v.Version(),
		Release:    v.Revision(),
		Epoch:      v.Epoch(),
		Arch:       p.arch,
		Maintainer: p.maint,
	}
	// "Source: name (version)" when the source version differs from the
	// binary's, "Source: name" when only the name does, absent when neither.
	srcName, srcVer := p.pkg, p.ver
	if p.src != "" {
		name, rest, _ := strings.Cut(p.src, " ")
		srcName = name
		if rest = strings.TrimSpace(rest); rest != "" {
			if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
				return ftypes.Package{}, false, fmt.Errorf("package %s: malformed Source %q", p.pkg, p.src)
			}
			srcVer = strings.TrimSpace(rest[1 : len(rest)-1])
		}
	}
	sv, err := debversion.NewVersion(srcVer)
	if err != nil {
		return ftypes.Package{}, false, fmt.Errorf("package %s: source version %q: %w", p.pkg, srcVer, err)
	}
	pkg.SrcName, pkg.SrcVersion, pkg.SrcRelease, pkg.SrcEpoch = srcName, sv.Version(), sv.Revision(), sv.Epoch()
	return pkg, true, nil
}
