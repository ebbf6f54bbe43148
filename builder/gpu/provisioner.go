package gpu

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	"github.com/hashicorp/packer-plugin-sdk/template/interpolate"

	"github.com/gpuhost/gpuhost/builder/internal/configerr"
	"github.com/gpuhost/gpuhost/containers/seed"
	"github.com/gpuhost/gpuhost/containers/trivy"
	"github.com/gpuhost/gpuhost/facts/packages"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/internal/userfile"
	"github.com/gpuhost/gpuhost/manifest"
	"github.com/gpuhost/gpuhost/manifest/lock"
)

// Provisioner is the Packer provisioner "gpuhost-gpu".
type Provisioner struct {
	config Config
	// now is the clock for the manifest's build time; tests replace it.
	now func() time.Time
	// seedOptions are the image pull options the configuration does not
	// set (credentials, transport, retry pacing); tests set them.
	seedOptions seed.Options
}

var _ packersdk.Provisioner = (*Provisioner)(nil)

// ConfigSpec returns the HCL2 spec of Config.
func (p *Provisioner) ConfigSpec() hcldec.ObjectSpec {
	return p.config.FlatMapstructure().HCL2Spec()
}

// Prepare decodes and validates the configuration; every problem is listed.
func (p *Provisioner) Prepare(raws ...interface{}) error {
	c, err := Decode(raws...)
	if err != nil {
		return err
	}
	p.config = *c
	return nil
}

const (
	planName           = "gpuhost-gpu-plan.sh"
	manifestStageName  = "gpuhost-gpu-manifest.json"
	manifestScriptName = "gpuhost-gpu-manifest.sh"
	sbomStageName      = "gpuhost-gpu-sbom.cdx.json"
	// digestsStageName is where the plan leaves the .deb digests of the
	// installed packages, in the lock file's format, for the manifest.
	digestsStageName = "gpuhost-gpu-debs.lock"
	// dkmsKeyStageName and dkmsCertStageName are where dkms's signing key
	// and certificate wait for the plan, which moves them into place.
	dkmsKeyStageName  = "gpuhost-gpu-mok.key"
	dkmsCertStageName = "gpuhost-gpu-mok.pub"
	// maxProbeOutput bounds what a small probe command may print: the
	// target is not trusted to stop talking.
	maxProbeOutput = 1 << 20
	// maxDownload bounds each file fetched for the manifest.
	maxDownload = 64 << 20
)

// Provision resolves the distribution and kernel when the configuration left
// them out, renders the plan, uploads and runs it, and writes the manifest.
func (p *Provisioner) Provision(ctx context.Context, ui packersdk.Ui, comm packersdk.Communicator, generated map[string]interface{}) error {
	cfg := p.config
	builderArchive(&cfg.Manifest, generated)
	if cfg.Distro.ID == "" {
		d, err := detectDistro(ctx, comm)
		if err != nil {
			return err
		}
		cfg.Distro = d
		ui.Say(fmt.Sprintf("gpuhost-gpu: target is %s %s (%s)", d.ID, d.VersionID, d.Codename))
	}
	if cfg.needsKernel() && cfg.TargetKernel == "" {
		k, err := detectKernel(ctx, comm)
		if err != nil {
			return err
		}
		cfg.TargetKernel = k
		ui.Say("gpuhost-gpu: target kernel is " + k)
	}
	if err := configerr.Check("gpuhost-gpu", cfg.validate()); err != nil {
		return err
	}
	plan, err := RenderPlan(cfg)
	if err != nil {
		return err
	}
	if err := stageDKMSKey(comm, &cfg); err != nil {
		return err
	}
	planPath := path.Join(cfg.RemoteFolder, planName)
	if err := comm.Upload(planPath, strings.NewReader(plan), nil); err != nil {
		return fmt.Errorf("uploading the plan to %s: %w", planPath, err)
	}
	ui.Say("gpuhost-gpu: running the plan (" + planPath + ")")
	if err := runScript(ctx, ui, comm, &cfg, planPath, "start"); err != nil {
		return err
	}
	if err := p.seedImages(ctx, ui, comm, &cfg); err != nil {
		return err
	}
	if cfg.Manifest.Skip {
		return nil
	}
	now := time.Now
	if p.now != nil {
		now = p.now
	}
	ui.Say("gpuhost-gpu: writing " + manifest.Path)
	return writeManifest(ctx, ui, comm, &cfg, now())
}

// stageDKMSKey uploads dkms's signing key and certificate, when configured,
// for the plan's dkms step.
func stageDKMSKey(comm packersdk.Communicator, cfg *Config) error {
	if cfg.DKMS.SigningKey == "" {
		return nil
	}
	for _, f := range []struct{ field, src, dst string }{
		{"dkms.signing_key", cfg.DKMS.SigningKey, dkmsKeyStageName},
		{"dkms.signing_certificate", cfg.DKMS.SigningCertificate, dkmsCertStageName},
	} {
		data, err := userfile.Read(f.src, userfile.MaxKey)
		if err != nil {
			return fmt.Errorf("%s: %w", f.field, err)
		}
		dst := path.Join(cfg.RemoteFolder, f.dst)
		if err := comm.Upload(dst, bytes.NewReader(data), nil); err != nil {
			return fmt.Errorf("%s: uploading to %s: %w", f.field, dst, err)
		}
	}
	return nil
}

// builderArchive fills the manifest's mirror and snapshot, when the
// configuration left both out, from what the builder says it bootstrapped
// from (gpuhost-rootfs's generated Mirror and Snapshot). Values that are
// not plain URLs and timestamps are left out.
func builderArchive(m *ManifestConfig, generated map[string]interface{}) {
	if m.Mirror != "" || m.Snapshot != "" {
		return
	}
	mirror, _ := generated["Mirror"].(string)
	snapshot, _ := generated["Snapshot"].(string)
	// A lock made from the manifest must be able to hold them.
	if lock.ValidMirror(mirror) {
		m.Mirror = mirror
	}
	if lock.ValidSnapshot(snapshot) {
		m.Snapshot = snapshot
	}
}

// runScript runs an uploaded script through execute_command, streams its
// output to ui and names the step that failed. The script is removed after.
func runScript(ctx context.Context, ui packersdk.Ui, comm packersdk.Communicator, cfg *Config, scriptPath, firstStep string) error {
	ictx := cfg.ctx
	ictx.Data = struct{ Path string }{Path: scriptPath}
	command, err := interpolate.Render(cfg.ExecuteCommand, &ictx)
	if err != nil {
		return fmt.Errorf("execute_command: %w", err)
	}
	steps := &stepTracker{step: firstStep}
	cmd := &packersdk.RemoteCmd{Command: command, Stdout: steps, Stderr: steps}
	if err := cmd.RunWithUi(ctx, comm, ui); err != nil {
		return fmt.Errorf("running %s: %w", scriptPath, err)
	}
	code := cmd.ExitStatus()
	// Best effort: a leftover script in /tmp is no reason to fail a build
	// that has succeeded, and a failed build is reported for its own cause.
	_, _, _ = probe(ctx, comm, "rm -f '"+scriptPath+"'")
	if code != 0 {
		return fmt.Errorf("gpuhost-gpu: step %q failed (exit %d)", steps.last(), code)
	}
	return nil
}

// stepTracker remembers the last step marker the plan printed.
type stepTracker struct {
	mu   sync.Mutex
	buf  []byte
	step string
}

const stepMarker = "==> gpuhost-gpu step: "

func (s *stepTracker) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, b...)
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			break
		}
		line := string(s.buf[:i])
		s.buf = s.buf[i+1:]
		if rest, ok := strings.CutPrefix(strings.TrimRight(line, "\r"), stepMarker); ok {
			s.step = rest
		}
	}
	// A line without a newline is never a marker worth keeping forever.
	if len(s.buf) > 4096 {
		s.buf = s.buf[:0]
	}
	return len(b), nil
}

func (s *stepTracker) last() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.step
}

// limitedBuffer keeps the first max bytes and reports whether more came.
type limitedBuffer struct {
	mu        sync.Mutex
	b         bytes.Buffer
	max       int
	truncated bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	room := l.max - l.b.Len()
	if len(p) > room {
		l.truncated = true
		if room > 0 {
			l.b.Write(p[:room])
		}
		return len(p), nil
	}
	l.b.Write(p)
	return len(p), nil
}

// probe runs a short command and returns its bounded stdout and stderr.
func probe(ctx context.Context, comm packersdk.Communicator, command string) (string, int, error) {
	out := &limitedBuffer{max: maxProbeOutput}
	errOut := &limitedBuffer{max: 4096}
	// Communicators wrap the command in their own quoting (the SDK's chroot
	// communicator puts it inside double quotes, so "$f" would expand on the
	// build host). Shipping it base64-encoded keeps every quote and $ intact.
	wrapped := "echo " + base64.StdEncoding.EncodeToString([]byte(command)) + " | base64 -d | sh"
	cmd := &packersdk.RemoteCmd{Command: wrapped, Stdout: out, Stderr: errOut}
	if err := comm.Start(ctx, cmd); err != nil {
		return "", 0, fmt.Errorf("starting %q: %w", command, err)
	}
	done := make(chan int, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case code := <-done:
		if out.truncated {
			return "", code, fmt.Errorf("%q printed more than %d bytes", command, maxProbeOutput)
		}
		if code != 0 {
			return out.b.String(), code, fmt.Errorf("%q exited %d: %s", command, code, strings.TrimSpace(errOut.b.String()))
		}
		return out.b.String(), 0, nil
	case <-ctx.Done():
		return "", 0, ctx.Err()
	}
}

// detectDistro reads the target's os-release through its own shell, the way
// the distribution's scripts read it.
func detectDistro(ctx context.Context, comm packersdk.Communicator) (Distro, error) {
	out, _, err := probe(ctx, comm, `. /etc/os-release && printf '%s\n%s\n%s\n' "${ID:-}" "${VERSION_ID:-}" "${VERSION_CODENAME:-}"`)
	if err != nil {
		return Distro{}, fmt.Errorf("distro: reading the target's /etc/os-release (set distro to skip this): %w", err)
	}
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) != 3 {
		return Distro{}, fmt.Errorf("distro: unexpected output from the target's /etc/os-release: %q", out)
	}
	d := Distro{ID: lines[0], VersionID: lines[1], Codename: lines[2]}
	for _, v := range []string{d.ID, d.VersionID, d.Codename} {
		if v != "" && !wordRe.MatchString(v) {
			return Distro{}, fmt.Errorf("distro: the target's /etc/os-release gives %q, which is no release name", v)
		}
	}
	return d, nil
}

// detectKernel takes the only kernel installed on the target. Never uname -r:
// in a chroot that is the build host's kernel.
func detectKernel(ctx context.Context, comm packersdk.Communicator) (string, error) {
	out, _, err := probe(ctx, comm, `for d in /lib/modules/*; do [ -d "$d" ] && echo "${d##*/}"; done; exit 0`)
	if err != nil {
		return "", fmt.Errorf("target_kernel: listing the target's /lib/modules: %w", err)
	}
	var kernels []string
	for _, k := range strings.Fields(out) {
		if !kernelRe.MatchString(k) {
			return "", fmt.Errorf("target_kernel: the target's /lib/modules holds %q, which is no kernel release", k)
		}
		kernels = append(kernels, k)
	}
	switch len(kernels) {
	case 1:
		return kernels[0], nil
	case 0:
		return "", errors.New("target_kernel: the target has no kernel under /lib/modules; install one first or set target_kernel")
	default:
		return "", fmt.Errorf("target_kernel: the target has %d kernels (%s); set target_kernel", len(kernels), strings.Join(kernels, ", "))
	}
}

// ManifestOptions returns what the manifest records from the configuration.
func (c *Config) ManifestOptions(now time.Time) manifest.Options {
	pins := manifest.Pins{
		Driver:           c.Driver.Version,
		DriverBranch:     c.Driver.Branch,
		DriverFlavor:     c.Driver.Flavor,
		DriverSource:     c.Driver.Source,
		CUDA:             c.CUDA.Version,
		ContainerToolkit: c.ContainerToolkit.Version,
		Kernel:           c.TargetKernel,
		Packages:         []manifest.PackagePin{},
		NGCImages:        []manifest.Image{},
	}
	for _, p := range c.Pins() {
		pins.Packages = append(pins.Packages, manifest.PackagePin{Name: p.Name, Version: p.Version})
	}
	for _, img := range c.NGCImages {
		pins.NGCImages = append(pins.NGCImages, manifest.Image{Ref: img.Ref, Digest: img.PinnedDigest()})
	}
	return manifest.Options{
		Pins: pins,
		Build: manifest.BuildInfo{
			Template:      c.Manifest.Template,
			PluginVersion: c.Manifest.PluginVersion,
			Mirror:        c.Manifest.Mirror,
			Snapshot:      c.Manifest.Snapshot,
		},
		Time:         now,
		PolicyDigest: c.Manifest.PolicyDigest,
	}
}

// BuildTime is the manifest's build time: SOURCE_DATE_EPOCH when set, so
// that rebuilding the same inputs gives the same manifest, else now.
func BuildTime(now time.Time) (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return now, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH %q is not a count of seconds", s)
	}
	return time.Unix(n, 0).UTC(), nil
}

// writeManifest mirrors the files the manifest reads from the target into a
// local tree, builds the manifest and the CycloneDX SBOM there with the same
// code the CLI uses, and installs both on the target.
func writeManifest(ctx context.Context, ui packersdk.Ui, comm packersdk.Communicator, cfg *Config, now time.Time) error {
	tmp, err := os.MkdirTemp("", "gpuhost-gpu-manifest-")
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	defer os.RemoveAll(tmp)

	names, err := listRemote(ctx, comm)
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := download(comm, name, filepath.Join(tmp, filepath.FromSlash(name))); err != nil {
			return err
		}
	}
	fsys, closer, err := sysroot.Open(tmp)
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	defer closer.Close()
	t, err := BuildTime(now)
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	opts := cfg.ManifestOptions(t)
	if opts.DebSHA256, err = downloadDigests(comm, path.Join(cfg.RemoteFolder, digestsStageName), filepath.Join(tmp, digestsStageName)); err != nil {
		return err
	}
	m, err := manifest.Build(ctx, fsys, opts)
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	data, err := m.Marshal()
	if err != nil {
		return err
	}
	if err := downloadOSRelease(comm, tmp); err != nil {
		return err
	}
	bom, err := trivy.BakedSBOMFS(ctx, fsys, t)
	if err != nil {
		return fmt.Errorf("sbom: %w", err)
	}
	stage := path.Join(cfg.RemoteFolder, manifestStageName)
	if err := comm.Upload(stage, bytes.NewReader(data), nil); err != nil {
		return fmt.Errorf("manifest: uploading to %s: %w", stage, err)
	}
	bomStage := path.Join(cfg.RemoteFolder, sbomStageName)
	if err := comm.Upload(bomStage, bytes.NewReader(bom), nil); err != nil {
		return fmt.Errorf("sbom: uploading to %s: %w", bomStage, err)
	}
	// Installing goes through execute_command like the plan, so that it has
	// the same privileges; the renames make each file appear whole.
	script := fmt.Sprintf(`set -eu
rm -f '%[6]s'
mkdir -p /etc/gpuhost %[4]s
cp '%[1]s' %[2]s.tmp
chmod 0644 %[2]s.tmp
mv -f %[2]s.tmp %[2]s
rm -f '%[1]s'
echo "gpuhost-gpu: manifest written to %[2]s"
cp '%[3]s' %[5]s.tmp
chmod 0644 %[5]s.tmp
mv -f %[5]s.tmp %[5]s
rm -f '%[3]s'
echo "gpuhost-gpu: SBOM written to %[5]s"
`, stage, manifest.Path, bomStage, path.Dir(packages.SBOMPath), packages.SBOMPath, path.Join(cfg.RemoteFolder, digestsStageName))
	scriptPath := path.Join(cfg.RemoteFolder, manifestScriptName)
	if err := comm.Upload(scriptPath, strings.NewReader(script), nil); err != nil {
		return fmt.Errorf("manifest: uploading %s: %w", scriptPath, err)
	}
	return runScript(ctx, ui, comm, cfg, scriptPath, "install manifest")
}

// downloadDigests reads the .deb digests the plan left at remote (the
// lock file's format, package records only) through local. The target is
// not trusted: the file is bounded and parsed as strictly as a lock.
func downloadDigests(comm packersdk.Communicator, remote, local string) (map[manifest.DebKey]string, error) {
	f, err := os.OpenFile(local, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	err = comm.Download(remote, &limitWriter{w: f, n: lock.MaxSize})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("manifest: downloading the package digests the plan left at %s: %w", remote, err)
	}
	data, err := os.ReadFile(local)
	if err != nil {
		return nil, fmt.Errorf("manifest: %w", err)
	}
	l, err := lock.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("manifest: parsing the package digests the plan left at %s: %w", remote, err)
	}
	out := make(map[manifest.DebKey]string, len(l.Packages))
	for _, p := range l.Packages {
		out[manifest.DebKey{Name: p.Name, Arch: p.Arch, Version: p.Version}] = p.SHA256
	}
	return out, nil
}

// listRemote asks the target which of the manifest's files exist. The
// answer is untrusted: only absolute, clean names the manifest would read
// are accepted, and only so many.
func listRemote(ctx context.Context, comm packersdk.Communicator) ([]string, error) {
	patterns := append([]string{manifest.DpkgStatus}, manifest.ConfigFiles...)
	command := "for f in " + strings.Join(patterns, " ") + `; do if [ -f "$f" ]; then echo "$f"; fi; done; exit 0`
	out, _, err := probe(ctx, comm, command)
	if err != nil {
		return nil, fmt.Errorf("manifest: listing the target's files: %w", err)
	}
	var names []string
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		name := sc.Text()
		if name == "" {
			continue
		}
		if path.Clean(name) != name || (name != manifest.DpkgStatus && !manifest.MatchesConfigFile(name)) {
			return nil, fmt.Errorf("manifest: the target listed %q, which was not asked for", name)
		}
		names = append(names, name)
		if len(names) > 2000 {
			return nil, errors.New("manifest: the target lists more than 2000 files")
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("manifest: listing the target's files: %w", err)
	}
	return names, nil
}

// limitWriter fails once more than n bytes have been written.
type limitWriter struct {
	w io.Writer
	n int64
}

var errTooLarge = errors.New("file too large")

func (l *limitWriter) Write(p []byte) (int, error) {
	if int64(len(p)) > l.n {
		return 0, errTooLarge
	}
	l.n -= int64(len(p))
	return l.w.Write(p)
}

// downloadOSRelease fetches the target's os-release into the local mirror,
// where the SBOM reads which distribution its packages belong to. Debian and
// Ubuntu keep it in /usr/lib, with /etc/os-release a link to it.
func downloadOSRelease(comm packersdk.Communicator, tmp string) error {
	var errs []error
	for _, name := range []string{"/usr/lib/os-release", "/etc/os-release"} {
		dst := filepath.Join(tmp, filepath.FromSlash(name))
		err := download(comm, name, dst)
		if err == nil {
			return nil
		}
		_ = os.Remove(dst)
		errs = append(errs, err)
	}
	return fmt.Errorf("sbom: the target has no readable os-release: %w", errors.Join(errs...))
}

func download(comm packersdk.Communicator, name, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("manifest: %w", err)
	}
	err = comm.Download(name, &limitWriter{w: f, n: maxDownload})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("manifest: downloading %s: %w", name, err)
	}
	return nil
}
