package gpu

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/gpuhost/gpuhost/containers/seed/seedtest"
	"github.com/gpuhost/gpuhost/facts/packages"
	"github.com/gpuhost/gpuhost/manifest"
)

// dirComm is a communicator onto a directory that stands for the target's
// root: files go in and out under it, and commands run in a local sh with
// the target's absolute paths mapped under it. The plan itself is not run
// (it would call apt-get); planResult stands in for it.
type dirComm struct {
	root string

	mu       sync.Mutex
	commands []string
	uploads  map[string]string
	// planResult plays the plan: it prints to stdout and returns the exit
	// status.
	planResult func(stdout io.Writer) int
}

var _ packersdk.Communicator = (*dirComm)(nil)

func (c *dirComm) local(p string) string { return filepath.Join(c.root, filepath.FromSlash(p)) }

// targetPath finds the target's absolute paths in a command: after a
// space, a quote or the start. Of /usr only the keyrings the manifest
// digests: the local sh still runs the build machine's /usr/bin.
var stagedScript = regexp.MustCompile(`^sh '(/tmp/[^']+)'$`)

var targetPath = regexp.MustCompile(`(^|[\s'"])/(etc|var|lib|tmp|usr/share/keyrings)/`)

func (c *dirComm) rewrite(command string) string {
	return targetPath.ReplaceAllString(command, "${1}"+c.root+"/${2}/")
}

var encodedProbe = regexp.MustCompile(`^echo ([A-Za-z0-9+/=]+) \| base64 -d \| sh$`)

func (c *dirComm) Start(ctx context.Context, rc *packersdk.RemoteCmd) error {
	c.mu.Lock()
	c.commands = append(c.commands, rc.Command)
	c.mu.Unlock()
	stdout, stderr := rc.Stdout, rc.Stderr
	if stdout == nil {
		stdout = io.Discard
	}
	if stderr == nil {
		stderr = io.Discard
	}
	if strings.Contains(rc.Command, planName) {
		go func() { rc.SetExited(c.planResult(stdout)) }()
		return nil
	}
	command := rc.Command
	// Probes arrive base64-encoded; decode them as the target's shell would,
	// so their paths can be mapped onto the test's directory.
	if m := encodedProbe.FindStringSubmatch(command); m != nil {
		b, err := base64.StdEncoding.DecodeString(m[1])
		if err != nil {
			return err
		}
		command = string(b)
	}
	// A staged script runs with its own paths mapped too.
	if m := stagedScript.FindStringSubmatch(command); m != nil {
		c.mu.Lock()
		command = c.uploads[m[1]]
		c.mu.Unlock()
	}
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, "sh", "-c", c.rewrite(command))
	cmd.Stdout = &out
	cmd.Stderr = stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		code = 1
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
	}
	// Names the target prints are its own, not this machine's.
	_, _ = io.WriteString(stdout, strings.ReplaceAll(out.String(), c.root, ""))
	go rc.SetExited(code)
	return nil
}

func (c *dirComm) Upload(dst string, r io.Reader, _ *os.FileInfo) error {
	data, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	c.mu.Lock()
	if c.uploads == nil {
		c.uploads = map[string]string{}
	}
	c.uploads[dst] = string(data)
	c.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(c.local(dst)), 0o755); err != nil {
		return err
	}
	return os.WriteFile(c.local(dst), data, 0o644)
}

func (c *dirComm) UploadDir(string, string, []string) error { return fmt.Errorf("not used") }

func (c *dirComm) Download(src string, w io.Writer) error {
	f, err := os.Open(c.local(src))
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(w, f)
	return err
}

func (c *dirComm) DownloadDir(string, string, []string) error { return fmt.Errorf("not used") }

// planDigests is what the plan's package digests step leaves on
// newTarget: a digest for each build it could tell (none for containerd).
var planDigests = "gpuhost.lock/v1\npackage libnvidia-ml1=535.261.03-1 amd64 " + strings.Repeat("a", 64) +
	"\npackage nvidia-smi=535.261.03-1 amd64 " + strings.Repeat("b", 64) + "\n"

func newTarget(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"etc/os-release": "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nID=debian\nVERSION_ID=\"12\"\nVERSION_CODENAME=bookworm\n",
		"var/lib/dpkg/status": "Package: containerd\nStatus: install ok installed\nArchitecture: amd64\nVersion: 1.6.20~ds1-1+b1\n\n" +
			"Package: libnvidia-ml1\nStatus: hold ok installed\nArchitecture: amd64\nVersion: 535.261.03-1\n\n" +
			"Package: nvidia-smi\nStatus: hold ok installed\nArchitecture: amd64\nVersion: 535.261.03-1\n",
		"etc/containerd/config.toml":               "version = 2\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n",
		"etc/containerd/conf.d/99-zz-gpuhost.toml": "version = 2\n",
		"etc/ssh/sshd_config":                      "PermitRootLogin no\n",
		"etc/default/grub.d/60-gpuhost.cfg":        "GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX systemd.unified_cgroup_hierarchy=1\"\n",
		"tmp/.keep":                                "",
		"tmp/" + digestsStageName:                  planDigests,
	}
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// caseRaw is the raw configuration of testdata/cases/NAME.json.
func caseRaw(t *testing.T, name string) map[string]interface{} {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "cases", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]interface{}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	return raw
}

func debianRaw(t *testing.T) map[string]interface{} {
	t.Helper()
	raw := caseRaw(t, "debian-12-debian-535")
	// Leave the distribution for the provisioner to read from the target.
	delete(raw, "distro")
	// One NGC base, pinned in its ref, served by an in-process registry
	// standing in for nvcr.io.
	reg := seedtest.New(t)
	img := reg.Push(t, "nvidia/cuda", "12.4.1-base-ubuntu22.04", 1024, 2)
	raw["ngc_images"] = []interface{}{map[string]interface{}{
		"ref": "nvcr.io/nvidia/cuda@" + seedtest.Digest(t, img),
	}}
	raw["ngc_registry"] = reg.Host
	raw["ngc_cache_dir"] = t.TempDir()
	return raw
}

// pinnedDigest is the digest of the one NGC image debianRaw configures.
func pinnedDigest(raw map[string]interface{}) string {
	ref := raw["ngc_images"].([]interface{})[0].(map[string]interface{})["ref"].(string)
	_, d, _ := strings.Cut(ref, "@")
	return d
}

func TestProvisionRunsPlanAndWritesManifest(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "")
	root := newTarget(t)
	comm := &dirComm{root: root, planResult: func(w io.Writer) int {
		fmt.Fprintln(w, "==> gpuhost-gpu step: install driver")
		fmt.Fprintln(w, "==> gpuhost-gpu step: done")
		return 0
	}}
	var p Provisioner
	raw := debianRaw(t)
	if err := p.Prepare(raw); err != nil {
		t.Fatal(err)
	}
	p.now = func() time.Time { return time.Date(2025, 3, 4, 5, 6, 7, 0, time.UTC) }
	ui := packersdk.TestUi(t)
	if err := p.Provision(context.Background(), ui, comm, nil); err != nil {
		t.Fatal(err)
	}

	// The uploaded plan is exactly RenderPlan of the configuration with the
	// distribution the target reported.
	want := p.config
	want.Distro = Distro{ID: "debian", VersionID: "12", Codename: "bookworm"}
	plan, err := RenderPlan(want)
	if err != nil {
		t.Fatal(err)
	}
	if got := comm.uploads["/tmp/"+planName]; got != plan {
		t.Error("the uploaded plan is not RenderPlan's output")
	}
	if !strings.Contains(strings.Join(comm.commands, "\n"), "sh '/tmp/"+planName+"'") {
		t.Errorf("plan not run through execute_command: %q", comm.commands)
	}

	data, err := os.ReadFile(filepath.Join(root, "etc/gpuhost/manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	if m.Pins.Driver != "535.261.03-1" || m.Pins.DriverSource != "debian" {
		t.Errorf("pins %+v", m.Pins)
	}
	if len(m.Pins.NGCImages) != 1 || m.Pins.NGCImages[0].Digest != pinnedDigest(raw) {
		t.Errorf("ngc pins %+v", m.Pins.NGCImages)
	}
	if len(m.Packages) != 3 || m.Packages[1].Name != "libnvidia-ml1" || !m.Packages[1].Held {
		t.Errorf("inventory %+v", m.Packages)
	} else if m.Packages[0].SHA256 != "" || m.Packages[1].SHA256 != strings.Repeat("a", 64) || m.Packages[2].SHA256 != strings.Repeat("b", 64) {
		t.Errorf("the inventory's .deb digests are not the plan's: %+v", m.Packages)
	}
	var paths []string
	for _, f := range m.ConfigFiles {
		paths = append(paths, f.Path)
	}
	if got := strings.Join(paths, " "); got != "/etc/containerd/conf.d/99-zz-gpuhost.toml /etc/containerd/config.toml /etc/default/grub.d/60-gpuhost.cfg /etc/ssh/sshd_config" {
		t.Errorf("config files %s", got)
	}
	if m.Build.Time != "2025-03-04T05:06:07Z" || m.Build.Template != "debian-12-gpu" {
		t.Errorf("build %+v", m.Build)
	}
	// The SBOM lists the same inventory, where the sbom collector reads it.
	bom, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(packages.SBOMPath)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(bom, []byte(`"bomFormat": "CycloneDX"`)) || !bytes.Contains(bom, []byte("pkg:deb/debian/libnvidia-ml1@535.261.03-1")) {
		t.Errorf("SBOM does not list libnvidia-ml1:\n%.600s", bom)
	}
	// Staged files are cleaned up on the target.
	for _, name := range []string{planName, manifestStageName, manifestScriptName, sbomStageName, digestsStageName} {
		if _, err := os.Stat(filepath.Join(root, "tmp", name)); err == nil && name != planName {
			t.Errorf("/tmp/%s left on the target", name)
		}
	}
}

func TestProvisionNamesFailingStep(t *testing.T) {
	root := newTarget(t)
	comm := &dirComm{root: root, planResult: func(w io.Writer) int {
		fmt.Fprintln(w, "==> gpuhost-gpu step: apt update")
		fmt.Fprintln(w, "==> gpuhost-gpu step: install driver")
		fmt.Fprintln(w, "E: Version '535.261.03-1' for 'nvidia-smi' was not found")
		return 100
	}}
	var p Provisioner
	if err := p.Prepare(debianRaw(t)); err != nil {
		t.Fatal(err)
	}
	err := p.Provision(context.Background(), packersdk.TestUi(t), comm, nil)
	if err == nil || !strings.Contains(err.Error(), `step "install driver" failed (exit 100)`) {
		t.Fatalf("err = %v, want the failing step named", err)
	}
	if _, err := os.Stat(filepath.Join(root, "etc/gpuhost/manifest.json")); err == nil {
		t.Error("a manifest was written for a failed plan")
	}
}

func TestProvisionDetectsKernel(t *testing.T) {
	root := newTarget(t)
	if err := os.MkdirAll(filepath.Join(root, "lib/modules/6.1.0-28-amd64"), 0o755); err != nil {
		t.Fatal(err)
	}
	comm := &dirComm{root: root, planResult: func(io.Writer) int { return 0 }}
	raw := debianRaw(t)
	raw["hold"] = map[string]interface{}{"kernel": true}
	var p Provisioner
	if err := p.Prepare(raw); err != nil {
		t.Fatal(err)
	}
	if err := p.Provision(context.Background(), packersdk.TestUi(t), comm, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(comm.uploads["/tmp/"+planName], "pin_check 'linux-image-6.1.0-28-amd64' ''") {
		t.Error("the plan does not hold the kernel found under /lib/modules")
	}

	// Two kernels: the provisioner must not guess.
	if err := os.MkdirAll(filepath.Join(root, "lib/modules/6.1.0-29-amd64"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := p.Provision(context.Background(), packersdk.TestUi(t), comm, nil)
	if err == nil || !strings.Contains(err.Error(), "set target_kernel") {
		t.Errorf("err = %v, want a request to set target_kernel", err)
	}
}

func TestProvisionRefusesHostileTargetAnswers(t *testing.T) {
	root := newTarget(t)
	if err := os.WriteFile(filepath.Join(root, "etc/os-release"), []byte("ID='ubuntu; rm -rf /'\nVERSION_ID=22.04\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	comm := &dirComm{root: root, planResult: func(io.Writer) int { t.Error("plan ran"); return 0 }}
	var p Provisioner
	if err := p.Prepare(debianRaw(t)); err != nil {
		t.Fatal(err)
	}
	if err := p.Provision(context.Background(), packersdk.TestUi(t), comm, nil); err == nil {
		t.Fatal("a hostile os-release was accepted")
	}

	// A listing that names files the manifest never asked for is refused.
	names := []string{"/etc/shadow"}
	for _, n := range names {
		if manifest.MatchesConfigFile(n) {
			t.Errorf("%s accepted", n)
		}
	}
}

func TestStepTracker(t *testing.T) {
	var s stepTracker
	fmt.Fprint(&s, "noise\n==> gpuhost-gpu step: a\n==> gpuhost-gpu st")
	fmt.Fprint(&s, "ep: b\r\npartial")
	if s.last() != "b" {
		t.Errorf("last = %q", s.last())
	}
	s.Write(bytes.Repeat([]byte("x"), 10000))
	if len(s.buf) > 4096 {
		t.Error("unbounded line buffer")
	}
}

func TestProvisionRefusesBadPackageDigests(t *testing.T) {
	root := newTarget(t)
	if err := os.WriteFile(filepath.Join(root, "tmp", digestsStageName), []byte("gpuhost.lock/v1\npackage nvidia-smi=535 amd64 $(reboot)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	comm := &dirComm{root: root, planResult: func(io.Writer) int { return 0 }}
	var p Provisioner
	if err := p.Prepare(debianRaw(t)); err != nil {
		t.Fatal(err)
	}
	err := p.Provision(context.Background(), packersdk.TestUi(t), comm, nil)
	if err == nil || !strings.Contains(err.Error(), "parsing the package digests the plan left at /tmp/"+digestsStageName+": line 2: package nvidia-smi: sha256") {
		t.Fatalf("err = %v, want the digests file and its line named", err)
	}
	if _, err := os.Stat(filepath.Join(root, "etc/gpuhost/manifest.json")); err == nil {
		t.Error("a manifest was written from bad digests")
	}
}

func TestManifestTakesTheBuildersArchive(t *testing.T) {
	var m ManifestConfig
	builderArchive(&m, map[string]interface{}{"Mirror": "http://mirror.invalid/debian", "Snapshot": ""})
	if m.Mirror != "http://mirror.invalid/debian" || m.Snapshot != "" {
		t.Errorf("from the builder: %+v", m)
	}
	m = ManifestConfig{Snapshot: "20250101T000000Z"}
	builderArchive(&m, map[string]interface{}{"Mirror": "http://mirror.invalid/debian"})
	if m.Mirror != "" {
		t.Errorf("the configuration's archive was not kept: %+v", m)
	}
	m = ManifestConfig{}
	builderArchive(&m, map[string]interface{}{"Mirror": "http://x/\n$(reboot)", "Snapshot": 7})
	if m != (ManifestConfig{}) {
		t.Errorf("values no lock could hold were taken: %+v", m)
	}
}
