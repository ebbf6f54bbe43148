// Package manifest builds the baked manifest, gpuhost.manifest/v1: the
// record an image carries at /etc/gpuhost/manifest.json of what it was built
// to be (pins, package inventory, digests of the configuration that matters,
// the build), which drift detection later compares a live host against.
//
// Only digests of configuration files are recorded, never their contents, and
// nothing from the build's environment: a manifest holds no secrets.
package manifest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/packages"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// Schema is the value of Manifest.Schema.
const Schema = "gpuhost.manifest/v1"

// Path is where an image carries its manifest.
const Path = "/etc/gpuhost/manifest.json"

// DpkgStatus is the package database the inventory is read from.
const DpkgStatus = "/var/lib/dpkg/status"

const (
	// maxDpkgStatus matches the packages collector: a CUDA image has a few
	// MiB of status; more than 64 MiB is not a real system.
	maxDpkgStatus = 64 << 20
	// maxConfigFiles bounds how many files the globs may add, so that a
	// directory stuffed with *.conf cannot make the manifest unbounded.
	maxConfigFiles = 2000
)

// ConfigFiles are the files and globs whose digests the manifest records:
// what decides how the host runs containers and GPUs (containerd, docker,
// the NVIDIA container runtime, CDI specs, modprobe), who gets in and as
// whom (sshd and its PAM stack, sudoers), what it talks over (openssl and
// the files it includes, nftables), where its logs go (journald), what it
// boots and unlocks (grub, crypttab), what it would install next (apt
// sources, preferences and the keyrings that sign them) and what it
// audits. Absent files are omitted. /etc/audit/audit.rules is left out:
// augenrules regenerates it from rules.d at every boot.
var ConfigFiles = []string{
	"/etc/containerd/config.toml",
	"/etc/containerd/conf.d/*.toml",
	"/etc/docker/daemon.json",
	"/etc/nvidia-container-runtime/config.toml",
	"/etc/cdi/*",
	"/etc/ssh/sshd_config",
	"/etc/ssh/sshd_config.d/*",
	"/etc/pam.d/sshd",
	"/etc/sudoers",
	"/etc/sudoers.d/*",
	"/etc/ssl/openssl.cnf",
	"/etc/ssl/openssl.cnf.d/*",
	"/etc/nftables.conf",
	"/etc/systemd/journald.conf",
	"/etc/systemd/journald.conf.d/*",
	"/etc/default/grub",
	"/etc/default/grub.d/*",
	"/etc/crypttab",
	"/etc/modprobe.d/*.conf",
	"/etc/apt/sources.list",
	"/etc/apt/sources.list.d/*",
	"/etc/apt/preferences",
	"/etc/apt/preferences.d/*",
	"/etc/apt/trusted.gpg",
	"/etc/apt/trusted.gpg.d/*",
	"/etc/apt/keyrings/*",
	"/usr/share/keyrings/*",
	"/etc/audit/auditd.conf",
	"/etc/audit/rules.d/*",
}

// Manifest is the document at /etc/gpuhost/manifest.json.
type Manifest struct {
	// Schema is always "gpuhost.manifest/v1".
	Schema string `json:"schema"`
	// Pins is what the image was built to hold.
	Pins Pins `json:"pins"`
	// Packages is the full dpkg inventory, sorted by name then arch, with
	// held set for packages on hold and, where the build could tell, the
	// sha256 of each package's .deb.
	Packages []Package `json:"packages"`
	// ConfigFiles are the sha256 digests of the configuration that matters,
	// sorted by path.
	ConfigFiles []ConfigFile `json:"config_files"`
	// Build says how the image was made.
	Build BuildInfo `json:"build"`
	// PolicyDigest is the digest of the policy pack the image passed, when
	// known at build time.
	PolicyDigest string `json:"policy_digest,omitempty"`
}

// Pins is what the image was built to hold.
type Pins struct {
	// Driver is the exact package version of the NVIDIA driver.
	Driver string `json:"driver,omitempty"`
	// DriverBranch is the driver branch, such as "535".
	DriverBranch string `json:"driver_branch,omitempty"`
	// DriverFlavor is "open" or "proprietary".
	DriverFlavor string `json:"driver_flavor,omitempty"`
	// DriverSource is "cuda-repo", "ubuntu-archive" or "debian".
	DriverSource string `json:"driver_source,omitempty"`
	// CUDA is the CUDA toolkit version as configured.
	CUDA string `json:"cuda,omitempty"`
	// ContainerToolkit is the version of all four container toolkit packages.
	ContainerToolkit string `json:"container_toolkit,omitempty"`
	// Kernel is the kernel release the image boots.
	Kernel string `json:"kernel,omitempty"`
	// Packages are the held packages with their pinned versions; an empty
	// version means held at whatever version was installed.
	Packages []PackagePin `json:"packages"`
	// NGCImages are the container base images, by digest.
	NGCImages []Image `json:"ngc_images"`
}

// Package is one installed package of the inventory.
type Package struct {
	facts.Package
	// SHA256 is the hex sha256 of the .deb the package was installed from,
	// as apt's Packages index and the downloaded file give it; empty where
	// the build could not tell (a manifest made outside a build, or by a
	// plugin older than the field). `gpuhost lock --from` needs it.
	SHA256 string `json:"sha256,omitempty"`
}

// DebKey names one package build: what a .deb digest belongs to.
type DebKey struct {
	Name, Arch, Version string
}

// PackagePin is one held package.
type PackagePin struct {
	// Name is the package name.
	Name string `json:"name"`
	// Version is the pinned version, empty when any version is held.
	Version string `json:"version,omitempty"`
}

// Image is a container image pinned by digest.
type Image struct {
	// Ref is the reference as configured (registry/repository:tag or @digest).
	Ref string `json:"ref"`
	// Digest is "sha256:<hex>".
	Digest string `json:"digest"`
}

// ConfigFile is the digest of one configuration file.
type ConfigFile struct {
	// Path is the file's path inside the image.
	Path string `json:"path"`
	// SHA256 is the hex sha256 of the file's bytes.
	SHA256 string `json:"sha256"`
}

// BuildInfo says how the image was made.
type BuildInfo struct {
	// Template is the Packer template (or other tool) that built the image.
	Template string `json:"template,omitempty"`
	// PluginVersion is the version of the gpuhost plugin or CLI.
	PluginVersion string `json:"plugin_version,omitempty"`
	// Mirror is the package mirror the rootfs came from.
	Mirror string `json:"mirror,omitempty"`
	// Snapshot is the archive snapshot the rootfs came from.
	Snapshot string `json:"snapshot,omitempty"`
	// Time is when the manifest was made, RFC 3339 in UTC.
	Time string `json:"time"`
}

// Options is what Build cannot read from the tree.
type Options struct {
	// Pins as configured.
	Pins Pins
	// Build information; Build fills Time from Time below.
	Build BuildInfo
	// Time of the build; zero means now.
	Time time.Time
	// PolicyDigest, when known.
	PolicyDigest string
	// DebSHA256 are the sha256 digests of the installed packages' .debs;
	// an installed package with none here is recorded without one.
	DebSHA256 map[DebKey]string
}

// Build reads the package inventory and the configuration digests from fsys
// (an unpacked rootfs, or "/" on a host) and returns the manifest. A missing
// dpkg database is an error, since a manifest without an inventory is no
// baseline; a configuration file that is missing is omitted, and one that is
// not a regular file or is too large is an error naming it.
func Build(ctx context.Context, fsys sysroot.FS, opts Options) (*Manifest, error) {
	data, err := fsys.ReadFileLimit(DpkgStatus, maxDpkgStatus)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", fsys.Display(DpkgStatus), plain(err))
	}
	installed, err := packages.ParseDpkgStatus(data)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", fsys.Display(DpkgStatus), plain(err))
	}
	pkgs := make([]Package, 0, len(installed))
	for _, p := range installed {
		// Where dpkg's status file lists it is the scan's business, not
		// the inventory's.
		p.Line = 0
		pkgs = append(pkgs, Package{Package: p, SHA256: opts.DebSHA256[DebKey{Name: p.Name, Arch: p.Arch, Version: p.Version}]})
	}
	files, err := digestConfigFiles(ctx, fsys)
	if err != nil {
		return nil, err
	}
	t := opts.Time
	if t.IsZero() {
		t = time.Now()
	}
	b := opts.Build
	b.Time = t.UTC().Format(time.RFC3339)
	pins := opts.Pins
	pins.Packages = append([]PackagePin{}, pins.Packages...)
	pins.NGCImages = append([]Image{}, pins.NGCImages...)
	return &Manifest{
		Schema:       Schema,
		Pins:         pins,
		Packages:     pkgs,
		ConfigFiles:  files,
		Build:        b,
		PolicyDigest: opts.PolicyDigest,
	}, nil
}

// ConfigFileNames returns the configuration files present in fsys, sorted
// and without repeats.
func ConfigFileNames(fsys sysroot.FS) ([]string, error) {
	var names []string
	for _, pat := range ConfigFiles {
		matches, err := fsys.Glob(pat)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", fsys.Display(pat), plain(err))
		}
		for _, m := range matches {
			if !path.IsAbs(m) {
				m = "/" + m
			}
			names = append(names, m)
		}
		if len(names) > maxConfigFiles {
			return nil, fmt.Errorf("more than %d configuration files under %s", maxConfigFiles, fsys.Display(path.Dir(pat)))
		}
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// MatchesConfigFile says whether name is one the manifest records; the
// provisioner uses it to refuse paths a target offers that it never asked for.
func MatchesConfigFile(name string) bool {
	for _, pat := range ConfigFiles {
		if ok, _ := path.Match(pat, name); ok {
			return true
		}
	}
	return false
}

func digestConfigFiles(ctx context.Context, fsys sysroot.FS) ([]ConfigFile, error) {
	names, err := ConfigFileNames(fsys)
	if err != nil {
		return nil, err
	}
	files := []ConfigFile{}
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		fi, err := fsys.Stat(name)
		if err != nil {
			if sysroot.IsNotExist(err) {
				continue
			}
			return nil, fmt.Errorf("reading %s: %w", shown(fsys.Display(name)), plain(err))
		}
		// A glob such as sshd_config.d/* may match a directory; only files
		// are configuration.
		if fi.IsDir() {
			continue
		}
		data, err := fsys.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", shown(fsys.Display(name)), plain(err))
		}
		sum := sha256.Sum256(data)
		files = append(files, ConfigFile{Path: name, SHA256: hex.EncodeToString(sum[:])})
	}
	return files, nil
}

// shown is a file name as an error shows it: bare while it is printable
// ASCII without spaces, Go-quoted otherwise. The names come from globs
// over a tree whose owner chose them, and a bare newline in one would let
// the rest of the name pass for a line of its own.
func shown(name string) string {
	for i := 0; i < len(name); i++ {
		if name[i] <= ' ' || name[i] > '~' {
			return strconv.Quote(name)
		}
	}
	return name
}

// plain is err with its text Go-quoted where it holds a control byte or
// a byte that is not UTF-8, as the errors of the readers beneath can when
// they name a file or echo what they read. errors.Is and As see err.
func plain(err error) error {
	msg := err.Error()
	for _, r := range msg {
		if r == utf8.RuneError || !strconv.IsPrint(r) {
			return plainError{err: err, msg: strconv.Quote(msg)}
		}
	}
	return err
}

type plainError struct {
	err error
	msg string
}

func (e plainError) Error() string { return e.msg }
func (e plainError) Unwrap() error { return e.err }

// Marshal returns the manifest as indented JSON with a final newline.
func (m *Manifest) Marshal() ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return nil, fmt.Errorf("encoding manifest: %w", err)
	}
	return b.Bytes(), nil
}

// Write writes the manifest to path atomically: a reader sees the old file
// or the new one, never a torn one.
func (m *Manifest) Write(path string) error {
	data, err := m.Marshal()
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, data, 0o644)
}

// WriteFileAtomic writes data to a temporary file beside path, syncs it and
// renames it over path.
func WriteFileAtomic(path string, data []byte, perm os.FileMode) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = tmp.Chmod(perm); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = tmp.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// Decode parses a manifest and checks its schema.
func Decode(data []byte) (*Manifest, error) {
	var m Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if m.Schema != Schema {
		return nil, fmt.Errorf("schema is %q, want %q", m.Schema, Schema)
	}
	if dec.More() {
		return nil, errors.New("trailing data after the manifest")
	}
	return &m, nil
}
