package trivy

import (
	"errors"
	"fmt"
	"strings"

	ftypes "github.com/aquasecurity/trivy/pkg/fanal/types"
	"github.com/aquasecurity/trivy/pkg/purl"
	"github.com/aquasecurity/trivy/pkg/types"
	debversion "github.com/knqyf263/go-deb-version"

	"github.com/gpuhost/gpuhost/facts/osinfo"
	"github.com/gpuhost/gpuhost/facts/packages"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// errUnsupportedOS says os-release names a distribution trivy is not asked
// to match here.
var errUnsupportedOS = errors.New("unsupported distribution")

// inventory is what trivy needs to know about a target: its distribution
// and its installed OS packages.
type inventory struct {
	os   ftypes.OS
	pkgs []ftypes.Package
}

// readInventory reads os-release and the dpkg status of fsys, through the
// readers the os and packages collectors use: trivy's own filesystem walker
// would follow the target's symlinks and open its FIFOs, and a second
// parser could disagree with the facts on what is installed. A target
// without them is an error wrapping osinfo.ErrNoOSRelease or
// packages.ErrNoDpkg.
func readInventory(fsys sysroot.FS) (*inventory, error) {
	osr, err := readOSRelease(fsys)
	if err != nil {
		return nil, err
	}
	installed, err := packages.ReadDpkgStatus(fsys)
	if err != nil {
		return nil, err
	}
	pkgs, err := toPackages(installed)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", fsys.Display(packages.DpkgStatusPath), err)
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

// readOSRelease finds the distribution in os-release.
func readOSRelease(fsys sysroot.FS) (ftypes.OS, error) {
	vars, name, err := osinfo.ReadOSRelease(fsys)
	if err != nil {
		return ftypes.OS{}, err
	}
	osr, err := trivyOS(vars)
	if err != nil {
		return ftypes.OS{}, fmt.Errorf("parsing %s: %w", fsys.Display(name), err)
	}
	return osr, nil
}

// trivyOS maps os-release's variables onto trivy's OS. Only the Debian
// family is supported: gpuhost bakes Ubuntu and Debian, and dpkg is the
// only package database read here.
func trivyOS(kv map[string]string) (ftypes.OS, error) {
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

// toPackages makes trivy packages of the installed ones, in their order
// (by name and architecture). The version and source fields are held to
// dpkg's grammar, because a database that lies about versions hides
// vulnerabilities.
func toPackages(installed []packages.DpkgPackage) ([]ftypes.Package, error) {
	pkgs := make([]ftypes.Package, 0, len(installed))
	for _, p := range installed {
		pkg, err := toPackage(p)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", p.Line, err)
		}
		pkgs = append(pkgs, pkg)
	}
	return pkgs, nil
}

func toPackage(p packages.DpkgPackage) (ftypes.Package, error) {
	v, err := debversion.NewVersion(p.Version)
	if err != nil {
		return ftypes.Package{}, fmt.Errorf("package %s: version %q: %w", p.Name, p.Version, err)
	}
	pkg := ftypes.Package{
		ID:         p.Name + "@" + p.Version,
		Name:       p.Name,
		Version:    v.Version(),
		Release:    v.Revision(),
		Epoch:      v.Epoch(),
		Arch:       p.Arch,
		Maintainer: p.Maintainer,
	}
	// "Source: name (version)" when the source version differs from the
	// binary's, "Source: name" when only the name does, absent when neither.
	srcName, srcVer := p.Name, p.Version
	if p.Source != "" {
		name, rest, _ := strings.Cut(p.Source, " ")
		srcName = name
		if rest = strings.TrimSpace(rest); rest != "" {
			if !strings.HasPrefix(rest, "(") || !strings.HasSuffix(rest, ")") {
				return ftypes.Package{}, fmt.Errorf("package %s: malformed Source %q", p.Name, p.Source)
			}
			srcVer = strings.TrimSpace(rest[1 : len(rest)-1])
		}
	}
	sv, err := debversion.NewVersion(srcVer)
	if err != nil {
		return ftypes.Package{}, fmt.Errorf("package %s: source version %q: %w", p.Name, srcVer, err)
	}
	pkg.SrcName, pkg.SrcVersion, pkg.SrcRelease, pkg.SrcEpoch = srcName, sv.Version(), sv.Revision(), sv.Epoch()
	return pkg, nil
}
