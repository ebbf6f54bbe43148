// Package nvidiarepo builds and serves a local stand-in for NVIDIA's CUDA
// repository (debian12/x86_64) and its libnvidia-container repository, for
// tests that run the gpuhost-gpu plan's cuda-repo path for real.
//
// The package names, version strings and dependency shape are NVIDIA's
// (cuda-keyring, nvidia-driver-pinning-<version>, nvidia-driver-<branch>-open,
// cuda-drivers-<branch>, nvidia-dkms-<branch>, libnvidia-compute-<branch>,
// nvidia-fabricmanager-<branch>, cuda-toolkit-X-Y, the container toolkit's
// four packages), with several versions of each. The packages are small,
// made with dpkg-deb, and their payloads carry the versions a build checks
// after installing: libnvidia-ml.so.<version> (a real shared object with
// the soname libnvidia-ml.so.1, made by the C compiler), a kernel module
// source that DKMS really builds and whose MODULE_VERSION is the driver's,
// nvidia-ctk, nvidia-container-cli and nvcc that print their versions.
// Both repositories are signed, each with its own throwaway key made by
// gpg (Release, InRelease, Release.gpg), and served over HTTP on
// 127.0.0.1.
package nvidiarepo

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Options say what to build.
type Options struct {
	// Official is the directory of NVIDIA's CUDA repositories that
	// cuda-keyring's own source list names, as the real package does
	// (gpu.DefaultCUDARepositories). Required.
	Official string
	// CC is the C compiler that makes the shared library stubs. Default
	// "cc".
	CC string
	// Gpg is the gpg binary. Default "gpg".
	Gpg string
	// IgnoredPinning names each nvidia-driver-pinning package's
	// preferences file without the .pref extension, so that apt ignores
	// it (the first version of this stand-in did): the driver's
	// components then resolve to their newest builds, for a test that the
	// payload checks catch what the package versions alone would not.
	IgnoredPinning bool
	// Distro is the CUDA repository directory to serve, one of Distros.
	// Default CUDADistro.
	Distro string
	// Withdrawn are builds ("name=version") left out of the CUDA
	// repository, as NVIDIA withdraws one: the packages that depend on
	// them stay.
	Withdrawn []string
}

// Layout is a built pair of repositories under Root, the directory to
// serve; the paths below are relative to it and match the URLs the
// provisioner's repositories block takes.
type Layout struct {
	Root string
	// CUDARepos is the directory of CUDA repositories (repositories.cuda):
	// compute/cuda/repos, holding debian12/x86_64/.
	CUDARepos string
	// Toolkit is the container toolkit's repository directory
	// (repositories.container_toolkit), holding amd64/.
	Toolkit string
	// ToolkitKey is the toolkit's ASCII-armored key file
	// (repositories.container_toolkit_key).
	ToolkitKey string
	// Distro is the CUDA repository's distribution directory, under
	// CUDARepos, beside its architecture CUDAArch.
	Distro string
	// DriverVersions are the driver versions it publishes, by branch
	// (DriverVersionsOn Distro).
	DriverVersions map[string][]string
	// KeyringSHA256 is the sha256 of cuda-keyring_1.1-1_all.deb, and
	// ToolkitKeySHA256 of the armored toolkit key: the pins the
	// provisioner's keyring_sha256 block takes.
	KeyringSHA256, ToolkitKeySHA256 string
	// CUDAKey is the CUDA repository's public key as cuda-keyring
	// installs it (binary).
	CUDAKey []byte

	gpgHomes []string
	gpg      string
}

// Release is the date every Release file carries: fixed, so a rebuild
// differs only in its keys, and in the past, as apt requires.
var Release = time.Date(2025, 11, 1, 0, 0, 0, 0, time.UTC)

// Build writes both repositories under dir, which must be empty or
// missing. Close removes the gpg agents it started.
func Build(dir string, o Options) (_ *Layout, err error) {
	if o.Official == "" {
		return nil, errors.New("nvidiarepo: Options.Official is required")
	}
	if o.CC == "" {
		o.CC = "cc"
	}
	if o.Gpg == "" {
		o.Gpg = "gpg"
	}
	if o.Distro == "" {
		o.Distro = CUDADistro
	}
	if _, ok := Distros[o.Distro]; !ok {
		return nil, fmt.Errorf("nvidiarepo: Options.Distro %q is not one of debian12, ubuntu2204, ubuntu2404", o.Distro)
	}
	l := &Layout{
		Distro:         o.Distro,
		DriverVersions: DriverVersionsOn(o.Distro),
		Root:           dir,
		CUDARepos:      "compute/cuda/repos",
		Toolkit:        "libnvidia-container/stable/deb",
		ToolkitKey:     "libnvidia-container/gpgkey",
		gpg:            o.Gpg,
	}
	defer func() {
		if err != nil {
			l.Close()
		}
	}()
	cudaDir := filepath.Join(dir, l.CUDARepos, l.Distro, CUDAArch)
	toolkitDir := filepath.Join(dir, l.Toolkit, "amd64")
	work := filepath.Join(dir, ".build")
	for _, d := range []string{cudaDir, toolkitDir, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	defer os.RemoveAll(work)

	cudaHome, err := l.newKey("cuda", "gpuhost stand-in CUDA repository <cuda@gpuhost.invalid>")
	if err != nil {
		return nil, err
	}
	toolkitHome, err := l.newKey("toolkit", "gpuhost stand-in libnvidia-container <toolkit@gpuhost.invalid>")
	if err != nil {
		return nil, err
	}
	if l.CUDAKey, err = l.run(cudaHome, nil, "--export"); err != nil {
		return nil, err
	}
	armored, err := l.run(toolkitHome, nil, "--export", "--armor")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, l.ToolkitKey), armored, 0o644); err != nil {
		return nil, err
	}
	l.ToolkitKeySHA256 = sha(armored)

	cuda := []pkg{keyringPackage(l.CUDAKey, strings.TrimRight(o.Official, "/"), l.Distro)}
	for _, branch := range sortedKeys(l.DriverVersions) {
		for _, v := range l.DriverVersions[branch] {
			cuda = append(cuda, driverPackages(branch, v, o.IgnoredPinning)...)
		}
	}
	for _, release := range sortedKeys(CUDAVersions) {
		for _, v := range CUDAVersions[release] {
			cuda = append(cuda, cudaPackages(release, v)...)
		}
	}
	var toolkit []pkg
	for _, v := range ToolkitVersions {
		toolkit = append(toolkit, toolkitPackages(v)...)
	}
	cuda = slices.DeleteFunc(cuda, func(p pkg) bool { return slices.Contains(o.Withdrawn, p.name+"="+p.version) })
	b := builder{work: work, cc: o.CC}
	if err := b.repository(cudaDir, cuda); err != nil {
		return nil, err
	}
	if err := b.repository(toolkitDir, toolkit); err != nil {
		return nil, err
	}
	keyring, err := os.ReadFile(filepath.Join(cudaDir, KeyringDeb))
	if err != nil {
		return nil, err
	}
	l.KeyringSHA256 = sha(keyring)
	for _, r := range []struct{ dir, home string }{{cudaDir, cudaHome}, {toolkitDir, toolkitHome}} {
		if err := l.sign(r.dir, r.home); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// Close stops the gpg agents Build started and removes their homes.
func (l *Layout) Close() {
	for _, h := range l.gpgHomes {
		_ = exec.Command("gpgconf", "--homedir", h, "--kill", "all").Run()
		_ = os.RemoveAll(h)
	}
	l.gpgHomes = nil
}

// newKey makes a throwaway signing key in a gpg home of its own. The home
// is a short directory of its own under the system's temporary one, not
// under the layout: gpg-agent's socket lives there, and a socket path
// longer than 107 bytes (a subtest's TempDir easily is) cannot be bound.
func (l *Layout) newKey(name, uid string) (string, error) {
	home, err := os.MkdirTemp("", "nvrepo-gpg-"+name+"-")
	if err != nil {
		return "", err
	}
	l.gpgHomes = append(l.gpgHomes, home)
	if _, err := l.run(home, nil, "--passphrase", "", "--quick-generate-key", uid, "ed25519", "sign", "never"); err != nil {
		return "", err
	}
	return home, nil
}

func (l *Layout) run(home string, stdin []byte, args ...string) ([]byte, error) {
	cmd := exec.Command(l.gpg, append([]string{"--homedir", home, "--batch", "--quiet", "--pinentry-mode", "loopback"}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("gpg %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// sign writes Release over the repository's indexes, InRelease (clear
// signed) and Release.gpg (detached), as a flat repository has them.
func (l *Layout) sign(dir, home string) error {
	var rel strings.Builder
	fmt.Fprintf(&rel, "Origin: gpuhost stand-in\nLabel: gpuhost stand-in for NVIDIA\nArchitectures: amd64 all\nDate: %s\nSHA256:\n", Release.Format(time.RFC1123Z))
	for _, name := range []string{"Packages", "Packages.gz"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		fmt.Fprintf(&rel, " %s %d %s\n", sha(b), len(b), name)
	}
	release := []byte(rel.String())
	if err := os.WriteFile(filepath.Join(dir, "Release"), release, 0o644); err != nil {
		return err
	}
	in, err := l.run(home, release, "--clearsign", "--digest-algo", "SHA512")
	if err != nil {
		return err
	}
	det, err := l.run(home, release, "--detach-sign", "--armor", "--digest-algo", "SHA512")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "InRelease"), in, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "Release.gpg"), det, 0o644)
}

// Serve serves the repositories on 127.0.0.1 at an ephemeral port until
// stop is called, and returns the base URL (http://127.0.0.1:PORT).
func (l *Layout) Serve() (base string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(l.Root)), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// Start builds the repositories under a temporary directory of t's and
// serves them until t ends; it returns the layout and the base URL.
func Start(t testing.TB, o Options) (*Layout, string) {
	t.Helper()
	l, err := Build(filepath.Join(t.TempDir(), "repo"), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	base, stop, err := l.Serve()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	return l, base
}

// builder makes packages and their index.
type builder struct {
	work string
	cc   string
	n    int
}

// repository builds every package into dir and writes its Packages index
// (plain and gzip), in the order given.
func (b *builder) repository(dir string, pkgs []pkg) error {
	var index bytes.Buffer
	for _, p := range pkgs {
		deb := filepath.Join(dir, p.debName())
		if err := b.deb(p, deb); err != nil {
			return fmt.Errorf("building %s %s: %w", p.name, p.version, err)
		}
		data, err := os.ReadFile(deb)
		if err != nil {
			return err
		}
		index.WriteString(p.control())
		fmt.Fprintf(&index, "Filename: ./%s\nSize: %d\nSHA256: %s\n\n", p.debName(), len(data), sha(data))
	}
	if err := os.WriteFile(filepath.Join(dir, "Packages"), index.Bytes(), 0o644); err != nil {
		return err
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.ModTime = Release
	if _, err := zw.Write(index.Bytes()); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "Packages.gz"), gz.Bytes(), 0o644)
}

func (p pkg) control() string {
	var c strings.Builder
	fmt.Fprintf(&c, "Package: %s\nVersion: %s\nArchitecture: %s\nMaintainer: gpuhost tests <tests@gpuhost.invalid>\nInstalled-Size: 1\n", p.name, p.version, p.arch)
	for _, f := range []struct{ k, v string }{{"Depends", p.depends}, {"Conflicts", p.conflicts}, {"Provides", p.provides}} {
		if f.v != "" {
			fmt.Fprintf(&c, "%s: %s\n", f.k, f.v)
		}
	}
	if p.ldconfig {
		c.WriteString("Multi-Arch: same\n")
	}
	fmt.Fprintf(&c, "Section: non-free/libs\nPriority: optional\nDescription: %s\n", p.description)
	return c.String()
}

// deb writes one package with dpkg-deb, every file owned by root and
// dated Release.
func (b *builder) deb(p pkg, out string) error {
	b.n++
	root := filepath.Join(b.work, fmt.Sprintf("pkg-%d", b.n))
	defer os.RemoveAll(root)
	ctl := filepath.Join(root, "DEBIAN")
	if err := os.MkdirAll(ctl, 0o755); err != nil {
		return err
	}
	write := func(path string, data string, mode os.FileMode) error {
		return os.WriteFile(path, []byte(data), mode)
	}
	if err := write(filepath.Join(ctl, "control"), p.control(), 0o644); err != nil {
		return err
	}
	if len(p.conffiles) > 0 {
		if err := write(filepath.Join(ctl, "conffiles"), strings.Join(p.conffiles, "\n")+"\n", 0o644); err != nil {
			return err
		}
	}
	if p.ldconfig {
		if err := write(filepath.Join(ctl, "triggers"), "activate-noawait ldconfig\n", 0o644); err != nil {
			return err
		}
	}
	for name, body := range map[string]string{"postinst": p.postinst, "prerm": p.prerm} {
		if body != "" {
			if err := write(filepath.Join(ctl, name), "#!/bin/sh\nset -e\n"+body, 0o755); err != nil {
				return err
			}
		}
	}
	for _, f := range p.files {
		dst := filepath.Join(root, f.path)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		switch {
		case f.link != "":
			if err := os.Symlink(f.link, dst); err != nil {
				return err
			}
			continue
		case f.soname != "":
			if err := b.sharedObject(dst, f.soname, filepath.Base(f.path)); err != nil {
				return err
			}
		default:
			if err := write(dst, f.data, os.FileMode(f.mode)); err != nil {
				return err
			}
		}
		if err := os.Chmod(dst, os.FileMode(f.mode)); err != nil {
			return err
		}
	}
	// Fixed dates, so that the same catalog builds the same bytes (the
	// build's apt cache may keep a package by name across runs).
	if err := filepath.Walk(root, func(path string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		tv := unix.NsecToTimeval(Release.UnixNano())
		return unix.Lutimes(path, []unix.Timeval{tv, tv})
	}); err != nil {
		return err
	}
	cmd := exec.Command("dpkg-deb", "--root-owner-group", "-Zgzip", "--build", root, out)
	cmd.Env = append(os.Environ(), fmt.Sprintf("SOURCE_DATE_EPOCH=%d", Release.Unix()))
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("dpkg-deb: %w: %s", err, b)
	}
	return nil
}

// sharedObject compiles a shared library whose content is its name, with
// the given soname: ldconfig puts it in the loader's cache as the real
// library would be. libnvidia-ml also gets NVML's entry points, answering
// as NVIDIA's library does on a host whose driver is not loaded (a QEMU
// guest has no GPU): a program that loads NVML by its soname, as the
// gpuhost agent does, then calls nvmlInit_v2.
func (b *builder) sharedObject(dst, soname, name string) error {
	src := filepath.Join(b.work, fmt.Sprintf("stub-%d.c", b.n))
	code := fmt.Sprintf("const char gpuhost_standin[] = %q;\n", name)
	if soname == "libnvidia-ml.so.1" {
		code += nvmlStub
	}
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		return err
	}
	cmd := exec.Command(b.cc, "-shared", "-fPIC", "-nostdlib", "-Wl,-soname,"+soname, "-Wl,--build-id=none", "-o", dst, src)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s: %w: %s", b.cc, err, out)
	}
	return nil
}

// nvmlStub is NVML's entry points with NVIDIA's return codes: 9 is
// NVML_ERROR_DRIVER_NOT_LOADED, 1 NVML_ERROR_UNINITIALIZED.
const nvmlStub = `int nvmlInit_v2(void) { return 9; }
int nvmlInit(void) { return 9; }
int nvmlInitWithFlags(unsigned int flags) { (void)flags; return 9; }
int nvmlShutdown(void) { return 1; }
const char *nvmlErrorString(int r) { return r == 9 ? "Driver Not Loaded" : "Uninitialized"; }
`

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
