package ubunturepo

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// carried are what the Ubuntu templates (extra_packages: init and udev
// for the disk they boot), the rootfs builder for a disk (the kernel,
// GRUB's images, initramfs-tools or dracut) and the
// gpuhost-gpu plan (its apt_install lines, and what DKMS builds modules
// with) install, besides mmdebstrap's minbase set. The kernel's packages
// are added by release.
var carried = []string{
	"apt", "systemd", "ca-certificates", "dkms",
	"curl", "gpg", "containerd",
	"passwd", "openssl", "openssh-server", "libpam-google-authenticator", "nftables", "auditd", "sudo",
	"grub-efi-amd64-bin", "grub-pc-bin", "systemd-sysv", "udev",
}

// Two closures, because they conflict: initramfs-tools for a plain disk,
// dracut with cryptsetup and the TPM2 tools for an encrypted one.
var (
	plainBoot     = []string{"initramfs-tools"}
	encryptedBoot = []string{"cryptsetup-bin", "dracut", "tpm2-tools"}
)

// debianPkg is one package of Debian's archive as this machine's apt
// sees it: its index stanza and the .deb apt downloaded.
type debianPkg struct {
	name, version string
	stanza        stanza
	deb           string
}

// fetcher runs apt with state of its own under the cache, against this
// machine's Debian sources.
type fetcher struct {
	dir, debs, seed string
}

func newFetcher(cache, seed string) (*fetcher, error) {
	f := &fetcher{dir: filepath.Join(cache, "apt"), debs: filepath.Join(cache, "debs"), seed: seed}
	for _, d := range []string{"state/lists/partial", "cache", "empty", f.debs + "/partial"} {
		if !filepath.IsAbs(d) {
			d = filepath.Join(f.dir, d)
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := os.WriteFile(filepath.Join(f.dir, "status"), nil, 0o644); err != nil {
		return nil, err
	}
	return f, nil
}

// sourceList is this machine's Debian sources: the deb822 file Debian
// installs, or the one-line list of older installations.
func sourceList() string {
	if _, err := os.Stat("/etc/apt/sources.list.d/debian.sources"); err == nil {
		return "/etc/apt/sources.list.d/debian.sources"
	}
	return "/etc/apt/sources.list"
}

func (f *fetcher) apt(name string, args ...string) ([]byte, error) {
	opts := []string{
		"-o", "Dir::Etc::SourceList=" + sourceList(),
		"-o", "Dir::Etc::SourceParts=" + filepath.Join(f.dir, "empty"),
		"-o", "Dir::Etc::Preferences=" + filepath.Join(f.dir, "none"),
		"-o", "Dir::Etc::PreferencesParts=" + filepath.Join(f.dir, "empty"),
		"-o", "Dir::State=" + filepath.Join(f.dir, "state"),
		"-o", "Dir::State::status=" + filepath.Join(f.dir, "status"),
		"-o", "Dir::Cache=" + filepath.Join(f.dir, "cache"),
		"-o", "Dir::Cache::archives=" + f.debs,
		"-o", "APT::Architecture=amd64",
		"-o", "APT::Architectures=amd64",
		"-o", "APT::Install-Recommends=false",
		"-o", "APT::Sandbox::User=root",
		"-o", "Debug::NoLocking=1",
	}
	cmd := exec.Command(name, append(opts, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// fetch downloads the closure of want, mmdebstrap's minbase set (every
// Essential and every required package) and the kernel's packages, and
// returns each package's stanza and file, by name.
func (f *fetcher) fetch(kernel string, want []string) (map[string]*debianPkg, error) {
	if _, err := f.apt("apt-get", "update"); err != nil {
		return nil, err
	}
	dump, err := f.apt("apt-cache", "dumpavail")
	if err != nil {
		return nil, err
	}
	avail := map[string]stanza{}
	var minbase []string
	for _, s := range parseStanzas(dump) {
		name := s.get("Package")
		avail[name+"="+s.get("Version")] = s
		if s.get("Essential") == "yes" || s.get("Priority") == "required" {
			minbase = append(minbase, name)
		}
	}
	base := slices.Concat(minbase, carried, want, []string{"linux-image-" + kernel, "linux-headers-" + kernel})
	if err := f.seedDebs(); err != nil {
		return nil, err
	}
	pkgs := map[string]*debianPkg{}
	for _, boot := range [][]string{plainBoot, encryptedBoot} {
		names := slices.Concat(base, boot)
		sim, err := f.apt("apt-get", append([]string{"install", "-s", "-y"}, names...)...)
		if err != nil {
			return nil, err
		}
		if _, err := f.apt("apt-get", append([]string{"install", "--download-only", "-y", "-q"}, names...)...); err != nil {
			return nil, err
		}
		for _, iv := range simulatedInstalls(sim) {
			s, ok := avail[iv[0]+"="+iv[1]]
			if !ok {
				return nil, fmt.Errorf("apt installs %s %s, which apt-cache dumpavail does not list", iv[0], iv[1])
			}
			if old, ok := pkgs[iv[0]]; ok && old.version != iv[1] {
				return nil, fmt.Errorf("the closures disagree on %s: %s and %s", iv[0], old.version, iv[1])
			}
			deb := filepath.Join(f.debs, debFileName(iv[0], iv[1], s.get("Architecture")))
			if _, err := os.Stat(deb); err != nil {
				return nil, fmt.Errorf("apt downloaded no %s: %w", filepath.Base(deb), err)
			}
			pkgs[iv[0]] = &debianPkg{name: iv[0], version: iv[1], stanza: s, deb: deb}
		}
	}
	return pkgs, nil
}

var instLine = regexp.MustCompile(`(?m)^Inst (\S+) (?:\[[^]]*\] )?\((\S+) `)

// simulatedInstalls are the name and version of each "Inst" line of
// apt-get install -s.
func simulatedInstalls(out []byte) [][2]string {
	var r [][2]string
	for _, m := range instLine.FindAllSubmatch(out, -1) {
		r = append(r, [2]string{string(m[1]), string(m[2])})
	}
	return r
}

// debFileName is the name apt gives a downloaded package: the epoch's
// colon escaped.
func debFileName(name, version, arch string) string {
	return fmt.Sprintf("%s_%s_%s.deb", name, strings.ReplaceAll(version, ":", "%3a"), arch)
}

// seedDebs links the seed directory's packages into the download cache,
// so apt (which checks each file's digest against the index) fetches only
// what neither has.
func (f *fetcher) seedDebs() error {
	entries, err := os.ReadDir(f.seed)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the seed %s: %w", f.seed, err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".deb") {
			continue
		}
		dst := filepath.Join(f.debs, e.Name())
		if _, err := os.Lstat(dst); err == nil {
			continue
		}
		if err := linkOrCopy(filepath.Join(f.seed, e.Name()), dst); err != nil {
			return err
		}
	}
	return nil
}

func linkOrCopy(src, dst string) error {
	if err := os.Link(src, dst); err == nil {
		return nil
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o644)
}

// stanza is one paragraph of a Debian control file, its fields in order.
type stanza []field

type field struct{ name, value string }

func (s stanza) get(name string) string {
	for _, f := range s {
		if strings.EqualFold(f.name, name) {
			return f.value
		}
	}
	return ""
}

// set replaces a field's value, or appends the field.
func (s stanza) set(name, value string) stanza {
	for i, f := range s {
		if strings.EqualFold(f.name, name) {
			s[i].value = value
			return s
		}
	}
	return append(s, field{name, value})
}

func (s stanza) without(names ...string) stanza {
	return slices.DeleteFunc(slices.Clone(s), func(f field) bool {
		return slices.ContainsFunc(names, func(n string) bool { return strings.EqualFold(n, f.name) })
	})
}

func (s stanza) String() string {
	var b strings.Builder
	for _, f := range s {
		b.WriteString(f.name)
		b.WriteString(":")
		if f.value != "" && !strings.HasPrefix(f.value, "\n") {
			b.WriteString(" ")
		}
		b.WriteString(f.value)
		b.WriteString("\n")
	}
	return b.String()
}

// parseStanzas reads paragraphs separated by blank lines; a line that
// starts with a space or tab continues the field before it.
func parseStanzas(data []byte) []stanza {
	var out []stanza
	var cur stanza
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.TrimSpace(line) == "":
			if len(cur) > 0 {
				out = append(out, cur)
			}
			cur = nil
		case line[0] == ' ' || line[0] == '\t':
			if len(cur) > 0 {
				cur[len(cur)-1].value += "\n" + line
			}
		case line[0] == '#':
		default:
			name, value, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			cur = append(cur, field{strings.TrimSpace(name), strings.TrimSpace(value)})
		}
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}
