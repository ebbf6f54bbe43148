// Package ubunturepo builds and serves a stand-in for Ubuntu's archive
// (jammy and noble, with their -updates and -security suites), for tests
// that bootstrap and provision an Ubuntu rootfs on a machine that reaches
// only Debian's archive.
//
// The payloads are Debian's own: the dependency closure of mmdebstrap's
// minbase set and of what the Ubuntu templates, the rootfs builder and the
// gpuhost-gpu plan install is downloaded from this machine's Debian sources
// (bookworm) with apt, so the binaries in a bootstrapped tree are real and
// run. Every package is re-versioned in Ubuntu's shape (see Reversion): its
// control.tar is rewritten, its data.tar left as Debian built it. So the
// files the plan reads or edits are Debian's, made by Debian's packages and
// their maintainer scripts: openssh-server's sshd_config (with its Include
// of sshd_config.d), PAM's common-* files (pam-auth-update of
// libpam-runtime), auditd.conf, containerd's config.toml, openssl.cnf,
// login.defs.
//
// Three packages carry Ubuntu's files instead, rebuilt here: base-files
// (os-release, lsb-release, issue and the dpkg origin of the release),
// sudo (Ubuntu's sudoers, with %admin, %sudo, use_pty and /snap/bin in
// secure_path) and ubuntu-keyring, which replaces debian-archive-keyring
// and carries this archive's throwaway key at
// /usr/share/keyrings/ubuntu-archive-keyring.gpg. The kernel is Debian's:
// linux-image-generic and linux-headers-generic are Ubuntu's meta packages,
// versioned as Ubuntu versions them (6.1.0.50.50 for 6.1.0-50-amd64), and
// depend on Debian's linux-image-<release> and linux-headers-<release>,
// which keep Debian's names because the release string is compiled into
// the kernel and named by its module directory.
// noble also gets an empty systemd-cryptsetup depending on systemd:
// Ubuntu splits it out of systemd from 24.04 on, and bookworm's systemd
// carries it.
//
// -updates publishes newer builds of openssh-server, openssh-client,
// openssh-sftp-server and containerd (the same payloads at a higher
// version), for tests that show a pin or hold keeps them out.
//
// The downloads and the built archive are kept in Options.Cache: a second
// Build with the same options only reads the archive back.
package ubunturepo

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Options say what to build.
type Options struct {
	// Suites are the releases to publish: "jammy", "noble" (both by
	// default).
	Suites []string
	// Kernel is the Debian kernel release re-served under Ubuntu's meta
	// package names; default "6.1.0-50-amd64".
	Kernel string
	// Cache is a persistent directory for the downloaded .debs and the
	// built archive, reused across runs. Required.
	Cache string
	// Extra are more packages to carry, with their dependency closure.
	Extra []string
	// Seed is a directory of .debs (an apt cache such as the Debian
	// bake's GPUHOST_E2E_APT_CACHE) that downloads are taken from first,
	// so that what both need is fetched once. Default: that variable, or
	// /tmp/gpuhost-e2e-apt-cache.
	Seed string
}

// Archive is a built, signed archive.
type Archive struct {
	// Root is the directory served: dists/ and pool/.
	Root string
	// Keyring is a binary OpenPGP keyring file that verifies the archive
	// (the templates' keyring variable).
	Keyring string
	// Kernel is the kernel release the meta packages install
	// (target_kernel).
	Kernel string
	// Versions are the versions as published, by suite (jammy-updates
	// apart from jammy) and package.
	Versions map[string]map[string]string
}

// releases are Ubuntu's releases this stand-in publishes.
var releases = map[string]release{
	"jammy": {number: "22.04", point: "22.04.5", name: "Jammy Jellyfish", debianVersion: "bookworm/sid", keyringVersion: "2021.03.26"},
	"noble": {number: "24.04", point: "24.04.3", name: "Noble Numbat", debianVersion: "trixie/sid", keyringVersion: "2023.11.28.1"},
}

type release struct {
	number, point, name string
	// debianVersion is Ubuntu's /etc/debian_version of the release.
	debianVersion  string
	keyringVersion string
}

// format changes whenever what Build makes from the same options changes,
// so that an archive cached by an older build is not reused.
const format = "ubunturepo 4"

// Date is every Release file's date: fixed and in the past, as apt
// requires.
var Date = time.Date(2025, 11, 1, 0, 0, 0, 0, time.UTC)

// Build makes the archive in o.Cache, or finds the one a previous Build
// with the same options left there.
func Build(t testing.TB, o Options) *Archive {
	t.Helper()
	a, err := BuildArchive(o)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// Start builds the archive and serves it on 127.0.0.1 until t ends; it
// returns the archive and its base URL (http://127.0.0.1:PORT).
func Start(t testing.TB, o Options) (*Archive, string) {
	t.Helper()
	a := Build(t, o)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(a.Root)), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return a, "http://" + ln.Addr().String()
}

// BuildArchive is Build without a test: it returns what fails.
func BuildArchive(o Options) (*Archive, error) {
	if o.Cache == "" {
		return nil, errors.New("ubunturepo: Options.Cache is required")
	}
	if len(o.Suites) == 0 {
		o.Suites = []string{"jammy", "noble"}
	}
	for _, s := range o.Suites {
		if _, ok := releases[s]; !ok {
			return nil, fmt.Errorf("ubunturepo: unknown suite %q; use jammy or noble", s)
		}
	}
	if o.Kernel == "" {
		o.Kernel = "6.1.0-50-amd64"
	}
	if _, err := kernelMetaVersion(o.Kernel); err != nil {
		return nil, err
	}
	if o.Seed == "" {
		o.Seed = os.Getenv("GPUHOST_E2E_APT_CACHE")
	}
	if o.Seed == "" {
		o.Seed = filepath.Join(os.TempDir(), "gpuhost-e2e-apt-cache")
	}
	if err := os.MkdirAll(o.Cache, 0o755); err != nil {
		return nil, fmt.Errorf("ubunturepo: cache: %w", err)
	}
	unlock, err := lockDir(o.Cache)
	if err != nil {
		return nil, err
	}
	defer unlock()

	dir := filepath.Join(o.Cache, "archive-"+o.digest())
	if a, err := readArchive(dir); err == nil {
		return a, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	tmp := dir + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return nil, err
	}
	if err := build(o, tmp); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return nil, err
	}
	return readArchive(dir)
}

// digest names the archive the options make.
func (o Options) digest() string {
	h := sha256.New()
	suites := slices.Sorted(slices.Values(o.Suites))
	extra := slices.Sorted(slices.Values(o.Extra))
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s", format, strings.Join(suites, ","), o.Kernel, strings.Join(extra, ","))
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// lockDir serializes builds sharing a cache, across processes.
func lockDir(dir string) (func(), error) {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("ubunturepo: locking the cache: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("ubunturepo: locking the cache: %w", err)
	}
	return func() { f.Close() }, nil
}

const (
	rootDir      = "root"
	keyringFile  = "archive-keyring.gpg"
	versionsFile = "versions.json"
)

// manifest is what a built archive's directory records beside the tree.
type manifest struct {
	Kernel   string                       `json:"kernel"`
	Versions map[string]map[string]string `json:"versions"`
}

func readArchive(dir string) (*Archive, error) {
	data, err := os.ReadFile(filepath.Join(dir, versionsFile))
	if err != nil {
		return nil, err
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, versionsFile), err)
	}
	return &Archive{Root: filepath.Join(dir, rootDir), Keyring: filepath.Join(dir, keyringFile), Kernel: m.Kernel, Versions: m.Versions}, nil
}
