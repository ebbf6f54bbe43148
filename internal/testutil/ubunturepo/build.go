package ubunturepo

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// updated are the packages -updates publishes a newer build of.
var updated = []string{"openssh-server", "openssh-client", "openssh-sftp-server", "containerd"}

// universe are the packages published in universe rather than main, as
// Ubuntu sorts them; restricted carries Canonical's NVIDIA server drivers
// (restricted.go).
var universe = []string{"libpam-google-authenticator", "tpm2-tools", "dracut", "dracut-core"}

// renames are Debian's packages that Ubuntu's own replace, in every
// relation that names them.
var renames = map[string]string{"debian-archive-keyring": "ubuntu-keyring"}

// components are each suite's components, in Release's order.
var components = []string{"main", "restricted", "universe"}

// published is one package in the pool, ready for a Packages index.
type published struct {
	stanza    stanza
	component string
	file      string // relative to the archive's root
}

// build makes the archive in dir: the pool, each suite's signed indexes,
// the keyring and the manifest.
func build(o Options, dir string) error {
	root := filepath.Join(dir, rootDir)
	work := filepath.Join(dir, "work")
	for _, d := range []string{root, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	f, err := newFetcher(o.Cache, o.Seed)
	if err != nil {
		return err
	}
	debian, err := f.fetch(o.Kernel, o.Extra)
	if err != nil {
		return fmt.Errorf("ubunturepo: downloading Debian's packages: %w", err)
	}
	s, err := newSigner()
	if err != nil {
		return err
	}
	defer s.close()
	key, err := s.publicKey()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, keyringFile), key, 0o644); err != nil {
		return err
	}
	m := manifest{Kernel: o.Kernel, Versions: map[string]map[string]string{}}
	for _, suite := range o.Suites {
		b := &suiteBuilder{suite: suite, root: root, work: work, kernel: o.Kernel, key: key, debian: debian}
		pkgs, updates, err := b.build()
		if err != nil {
			return fmt.Errorf("ubunturepo: %s: %w", suite, err)
		}
		for pocket, list := range map[string][]published{suite: pkgs, suite + "-updates": updates, suite + "-security": nil} {
			if err := writeSuite(root, suite, pocket, list, s); err != nil {
				return fmt.Errorf("ubunturepo: %s: %w", pocket, err)
			}
			if list != nil {
				m.Versions[pocket] = map[string]string{}
				for _, p := range list {
					m.Versions[pocket][p.stanza.get("Package")] = p.stanza.get("Version")
				}
			}
		}
	}
	if err := os.RemoveAll(work); err != nil {
		return err
	}
	data, err := json.MarshalIndent(m, "", "\t")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, versionsFile), data, 0o644)
}

// suiteBuilder makes one release's packages from Debian's.
type suiteBuilder struct {
	suite, root, work, kernel string
	key                       []byte
	debian                    map[string]*debianPkg
}

// build returns the release pocket's packages and -updates'.
func (b *suiteBuilder) build() (pkgs, updates []published, err error) {
	versions := map[string][2]string{}
	for name, p := range b.debian {
		versions[name] = [2]string{p.version, Reversion(p.version, b.suite, 1)}
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range b.debian {
			if !yield(n) {
				return
			}
		}
	})
	for _, name := range names {
		if _, gone := renames[name]; gone {
			continue
		}
		p, err := b.reversioned(b.debian[name], versions, versions[name][1])
		if err != nil {
			return nil, nil, fmt.Errorf("%s %s: %w", name, b.debian[name].version, err)
		}
		pkgs = append(pkgs, p)
	}
	ubuntu, err := b.ubuntuPackages()
	if err != nil {
		return nil, nil, err
	}
	pkgs = append(pkgs, ubuntu...)
	restricted, restrictedUpdates, err := b.restrictedPackages()
	if err != nil {
		return nil, nil, fmt.Errorf("restricted: %w", err)
	}
	pkgs = append(pkgs, restricted...)

	newer := map[string][2]string{}
	for n, v := range versions {
		newer[n] = v
	}
	for _, n := range updated {
		newer[n] = [2]string{b.debian[n].version, Reversion(b.debian[n].version, b.suite, 2)}
	}
	for _, n := range updated {
		p, err := b.reversioned(b.debian[n], newer, newer[n][1])
		if err != nil {
			return nil, nil, fmt.Errorf("%s update: %w", n, err)
		}
		updates = append(updates, p)
	}
	updates = append(updates, restrictedUpdates...)
	return pkgs, updates, nil
}

// reversioned publishes Debian's package p at version, its relations
// rewritten with versions; base-files and sudo carry Ubuntu's files.
func (b *suiteBuilder) reversioned(p *debianPkg, versions map[string][2]string, version string) (published, error) {
	ctl, err := debControl(p.deb)
	if err != nil {
		return published{}, err
	}
	ctl = rewriteControl(ctl, version, renames, versions)
	out := published{stanza: rewriteControl(slices.Clone(p.stanza), version, renames, versions), component: component(p.name)}
	out.file = poolPath(out.component, p.stanza, p.name, version, p.stanza.get("Architecture"))
	dst := filepath.Join(b.root, out.file)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return published{}, err
	}
	switch p.name {
	case "base-files":
		err = repack(b.work, p.deb, dst, ctl, ubuntuBaseFiles(b.suite), originsUbuntu)
	case "sudo":
		err = repack(b.work, p.deb, dst, ctl, map[string]string{"etc/sudoers": Sudoers}, nil)
	default:
		err = rewriteDeb(p.deb, dst, []byte(ctl.String()))
	}
	return out, err
}

// ubuntuPackages are the packages Debian has no counterpart for:
// ubuntu-keyring, the kernel's meta packages and, on noble, systemd-cryptsetup.
func (b *suiteBuilder) ubuntuPackages() ([]published, error) {
	meta, err := kernelMetaVersion(b.kernel)
	if err != nil {
		return nil, err
	}
	type spec struct {
		ctl   stanza
		files map[string]string
	}
	specs := []spec{
		{keyringControl(b.suite, b.key), map[string]string{
			strings.TrimPrefix(KeyringPath, "/"): string(b.key),
			// Ubuntu's apt trusts the archive key through this link.
			"etc/apt/trusted.gpg.d/ubuntu-keyring-2018-archive.gpg": "->" + KeyringPath,
		}},
		{kernelMeta("linux-image-generic", meta, "linux-image-"+b.kernel, "kernel image"), nil},
		{kernelMeta("linux-headers-generic", meta, "linux-headers-"+b.kernel, "kernel headers"), nil},
	}
	if b.suite == "noble" {
		sd, ok := b.debian["systemd"]
		if !ok {
			return nil, fmt.Errorf("no systemd in the closure for noble's systemd-cryptsetup")
		}
		specs = append(specs, spec{cryptsetupControl(Reversion(sd.version, b.suite, 1)), nil})
	}
	var out []published
	for _, s := range specs {
		p, err := b.publishNew("main", s.ctl, s.files)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}

// publishNew builds a package Debian has no counterpart for into the pool
// of component comp.
func (b *suiteBuilder) publishNew(comp string, ctl stanza, files map[string]string) (published, error) {
	p := published{stanza: ctl, component: comp}
	p.file = poolPath(comp, ctl, ctl.get("Package"), ctl.get("Version"), ctl.get("Architecture"))
	dst := filepath.Join(b.root, p.file)
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return published{}, err
	}
	return p, newPackage(b.work, dst, ctl, files)
}

func component(name string) string {
	if slices.Contains(universe, name) {
		return "universe"
	}
	return "main"
}

// poolPath is where a package lies: pool/COMPONENT/PREFIX/SOURCE/FILE, as
// Ubuntu's archive lays them out, the file named without the epoch.
func poolPath(comp string, s stanza, name, version, arch string) string {
	src, _, _ := strings.Cut(s.get("Source"), " ")
	if src == "" {
		src = name
	}
	prefix := src[:1]
	if strings.HasPrefix(src, "lib") && len(src) > 3 {
		prefix = src[:4]
	}
	if _, v, ok := strings.Cut(version, ":"); ok {
		version = v
	}
	return filepath.Join("pool", comp, prefix, src, fmt.Sprintf("%s_%s_%s.deb", name, version, arch))
}
