// Package agentimage builds the agent's OCI image without Docker: a minimal
// Debian root filesystem from mmdebstrap (glibc, which NVML's dlopen needs,
// and ca-certificates) under the lean binary, whose entrypoint is
// `gpuhost-agent agent`. The DaemonSet in deploy/ runs it by digest.
package agentimage

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// BinaryPath is where the image carries the lean binary.
	BinaryPath = "/usr/local/bin/gpuhost-agent"
	// StateDir is where the agent keeps its run history; the DaemonSet
	// mounts the node's /var/lib/gpuhost over it.
	StateDir = "/var/lib/gpuhost"
	// Suite is the Debian release of the base.
	Suite = "bookworm"
)

// Entrypoint is the image's entrypoint: the agent command, so a runtime's
// arguments are its flags.
var Entrypoint = []string{BinaryPath, "agent"}

// BaseOptions say where the base's packages come from.
type BaseOptions struct {
	// Mirror is what mmdebstrap takes as its MIRROR: a URI, a one-line
	// "deb ..." entry or a sources file. Empty: the first of this machine's
	// Debian sources files that exists, as the build machine reaches the
	// archive through them.
	Mirror string
	// AptCache, when set, is bind-mounted over the chroot's
	// /var/cache/apt/archives, so the packages are downloaded once.
	AptCache string
	// SourceDateEpoch is the time every file of the base carries, so two
	// bootstraps of the same packages give the same tar.
	SourceDateEpoch time.Time
	// Log receives mmdebstrap's output; nil discards it.
	Log io.Writer
}

// hostSources are the files Base looks for when no mirror is given.
var hostSources = []string{"/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"}

// Base bootstraps the image's root filesystem into the tar file dest with
// mmdebstrap (as root): Debian's Essential packages and ca-certificates,
// without documentation, manual pages or locales. mmdebstrap runs in private
// mount and PID namespaces, so its mounts and any process it leaves go away
// with it even when the caller is killed.
func Base(ctx context.Context, dest string, o BaseOptions) error {
	mirror := o.Mirror
	if mirror == "" {
		for _, s := range hostSources {
			if fi, err := os.Stat(s); err == nil && fi.Mode().IsRegular() {
				mirror = s
				break
			}
		}
	}
	if mirror == "" {
		return fmt.Errorf("bootstrapping the agent's base: no mirror given and none of %s exists", strings.Join(hostSources, ", "))
	}
	args := []string{
		"--mode=root", "--variant=essential", "--include=ca-certificates", "--format=tar",
		"--dpkgopt=path-exclude=/usr/share/man/*",
		"--dpkgopt=path-exclude=/usr/share/info/*",
		"--dpkgopt=path-exclude=/usr/share/locale/*",
		"--dpkgopt=path-exclude=/usr/share/doc/*",
		"--dpkgopt=path-include=/usr/share/doc/*/copyright",
	}
	if o.AptCache != "" {
		if err := os.MkdirAll(o.AptCache, 0o755); err != nil {
			return fmt.Errorf("apt cache: %w", err)
		}
		// Bound before the download and unbound before mmdebstrap's
		// cleanup, which would empty it; essential/unlink would delete the
		// essential packages from it.
		args = append(args, "--skip=essential/unlink",
			`--setup-hook=mkdir -p "$1/var/cache/apt/archives" && mount --bind "$GPUHOST_APT_CACHE" "$1/var/cache/apt/archives"`,
			`--customize-hook=umount "$1/var/cache/apt/archives"`)
	}
	args = append(args, Suite, dest, mirror)
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", `mount --make-rprivate / && exec mmdebstrap "$@"`, "mmdebstrap"}, args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID, Pdeathsig: syscall.SIGKILL}
	cmd.Env = append(os.Environ(), "GPUHOST_APT_CACHE="+o.AptCache)
	if !o.SourceDateEpoch.IsZero() {
		cmd.Env = append(cmd.Env, "SOURCE_DATE_EPOCH="+strconv.FormatInt(o.SourceDateEpoch.Unix(), 10))
	}
	var tail bytes.Buffer
	out := io.Writer(&tail)
	if o.Log != nil {
		out = io.MultiWriter(&tail, o.Log)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		os.Remove(dest)
		msg := tail.String()
		if len(msg) > 4096 {
			msg = "..." + msg[len(msg)-4096:]
		}
		return fmt.Errorf("mmdebstrap %s: %w\n%s", strings.Join(args, " "), err, msg)
	}
	return nil
}

// Options describe the image beyond its two layers.
type Options struct {
	// Version and Revision label the image (org.opencontainers.image.*).
	Version, Revision string
	// Created is the image's creation time and the time of the agent
	// layer's files; zero is the Unix epoch, so a rebuild of the same
	// inputs gives the same digest.
	Created time.Time
}

// Build makes the image from the base tar (from Base) and the lean agent
// binary. Neither file is read until the image's layers are.
func Build(base, binary string, o Options) (v1.Image, error) {
	if err := isELF(binary); err != nil {
		return nil, err
	}
	baseLayer, err := tarball.LayerFromFile(base, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("reading the base %s: %w", base, err)
	}
	bin, err := os.ReadFile(binary)
	if err != nil {
		return nil, fmt.Errorf("reading the agent binary: %w", err)
	}
	created := o.Created.UTC()
	if created.IsZero() {
		created = time.Unix(0, 0).UTC()
	}
	agentTar, err := agentLayer(bin, created)
	if err != nil {
		return nil, err
	}
	binLayer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(agentTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("making the agent layer: %w", err)
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img,
		mutate.Addendum{Layer: baseLayer, MediaType: types.OCILayer, History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "mmdebstrap --variant=essential --include=ca-certificates " + Suite, Comment: "Debian " + Suite + " base"}},
		mutate.Addendum{Layer: binLayer, MediaType: types.OCILayer, History: v1.History{Created: v1.Time{Time: created}, CreatedBy: "gpuhost agentimage: " + BinaryPath, Comment: "the lean gpuhost build"}},
	)
	if err != nil {
		return nil, fmt.Errorf("assembling the agent image: %w", err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = "amd64", "linux"
	cf.Created = v1.Time{Time: created}
	cf.Config = v1.Config{
		Entrypoint: Entrypoint,
		// Root, with what a runtime grants: the DaemonSet keeps four
		// capabilities and drops the rest (deploy/kubernetes says why a
		// non-root user cannot do the agent's work).
		User:       "0:0",
		WorkingDir: "/",
		Env: []string{
			"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			// The NVIDIA container runtime mounts NVML and the device
			// nodes in only when asked; utility is NVML and nvidia-smi.
			"NVIDIA_VISIBLE_DEVICES=all",
			"NVIDIA_DRIVER_CAPABILITIES=utility",
		},
		Volumes: map[string]struct{}{StateDir: {}},
		Labels: map[string]string{
			"org.opencontainers.image.title":       "gpuhost-agent",
			"org.opencontainers.image.description": "gpuhost's agent: scheduled compliance and drift scans of a GPU host through its root filesystem at /host, with /metrics",
			"org.opencontainers.image.version":     o.Version,
			"org.opencontainers.image.revision":    o.Revision,
			"org.opencontainers.image.created":     created.Format(time.RFC3339),
			"org.opencontainers.image.base.name":   "debian:" + Suite,
		},
	}
	return mutate.ConfigFile(img, cf)
}

// agentLayer is the tar of the binary and the directories the agent
// writes to, owned by root, every time set to created.
func agentLayer(bin []byte, created time.Time) ([]byte, error) {
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	dir := func(name string, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, ModTime: created, Format: tar.FormatPAX})
	}
	for _, d := range []struct {
		name string
		mode int64
	}{{"usr", 0o755}, {"usr/local", 0o755}, {"usr/local/bin", 0o755}, {"var", 0o755}, {"var/lib", 0o755}, {StateDir[1:], 0o700}, {"etc", 0o755}, {"etc/gpuhost", 0o755}, {"host", 0o755}} {
		if err := dir(d.name, d.mode); err != nil {
			return nil, err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: path.Clean(BinaryPath[1:]), Mode: 0o755, Size: int64(len(bin)), ModTime: created, Format: tar.FormatPAX}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// isELF refuses a binary that is not an x86-64 executable: a script or a
// binary for another machine would fail only on the node.
func isELF(binary string) error {
	f, err := elf.Open(binary)
	if err != nil {
		return fmt.Errorf("agent binary %s: not an ELF executable (build it with make build: bin/gpuhost-agent): %w", binary, err)
	}
	defer f.Close()
	if f.Class != elf.ELFCLASS64 || f.Machine != elf.EM_X86_64 || f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return fmt.Errorf("agent binary %s: a %s %s %s, not an x86-64 executable", binary, f.Class, f.Machine, f.Type)
	}
	return nil
}
