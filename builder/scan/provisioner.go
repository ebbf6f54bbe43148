package scan

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/hcl/v2/hcldec"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/gpuhost/gpuhost/builder/internal/evaluation"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	pipeline "github.com/gpuhost/gpuhost/scan"
	"github.com/gpuhost/gpuhost/target"
	"github.com/gpuhost/gpuhost/target/collector"
	"github.com/gpuhost/gpuhost/target/domains"
)

// Provisioner is the Packer provisioner "gpuhost-scan".
type Provisioner struct {
	config  Config
	scanner *pipeline.Scanner
	// Vulnerabilities makes the collector that matches the instance's
	// packages against the trivy DB in trivy_db, the same one the gate
	// uses. A configuration naming trivy_db is refused when it is nil.
	Vulnerabilities func(dbDir string) collector.Collector
}

var _ packersdk.Provisioner = (*Provisioner)(nil)

// ConfigSpec returns the HCL2 spec of Config.
func (p *Provisioner) ConfigSpec() hcldec.ObjectSpec { return p.config.FlatMapstructure().HCL2Spec() }

// Prepare decodes and validates the configuration; every problem is
// listed. It also compiles the policy pack with its params and waivers, so
// that `packer validate` finds a broken policy before an instance is
// launched.
func (p *Provisioner) Prepare(raws ...interface{}) error {
	c, err := Decode(raws...)
	if err != nil {
		return err
	}
	if c.TrivyDB != "" && p.Vulnerabilities == nil {
		return errors.New("gpuhost-scan: trivy_db is set, but this build of the plugin has no vulnerability matching")
	}
	sc, err := c.Scanner(context.Background())
	if err != nil {
		return fmt.Errorf("gpuhost-scan: %w", err)
	}
	p.config, p.scanner = *c, sc
	return nil
}

const (
	// maxStderr bounds what the instance's commands may print that is kept
	// and shown: the instance is not trusted to stop talking.
	maxStderr = 64 << 10
	// maxPackageFile bounds the dpkg status and os-release downloaded for
	// trivy_db; a full inventory is a few MB.
	maxPackageFile = 64 << 20
	// cleanupTimeout bounds the removal of the staged files, which runs
	// even after the build was cancelled.
	cleanupTimeout = 2 * time.Minute
)

// Provision collects the facts on the instance, judges them here and
// fails when the instance does not pass. The staged CLI and facts are
// removed from the instance whatever happened.
func (p *Provisioner) Provision(ctx context.Context, ui packersdk.Ui, comm packersdk.Communicator, _ map[string]interface{}) error {
	if p.scanner == nil {
		return errors.New("gpuhost-scan: not configured")
	}
	cfg := &p.config
	stage, err := newStage(cfg.RemoteFolder)
	if err != nil {
		return fmt.Errorf("gpuhost-scan: %w", err)
	}
	data, code, stderr, err := stage.collect(ctx, ui, comm, cfg)
	if cerr := stage.remove(comm); cerr != nil {
		err = errors.Join(err, cerr)
	}
	if err != nil {
		return fmt.Errorf("gpuhost-scan: %w", err)
	}
	f, err := decodeFacts(data, stage.facts, code, stderr)
	if err != nil {
		return fmt.Errorf("gpuhost-scan: %w", err)
	}
	if cfg.TrivyDB != "" {
		if err := p.matchPackages(ctx, ui, comm, f); err != nil {
			return fmt.Errorf("gpuhost-scan: %w", err)
		}
	}
	return p.judge(ctx, ui, f, code, stderr)
}

// judge evaluates the facts with the gate's code, writes the reports and
// the judged document, and says whether the instance passed.
func (p *Provisioner) judge(ctx context.Context, ui packersdk.Ui, f *facts.Facts, code int, stderr string) error {
	cfg := &p.config
	rep, data, err := p.scanner.Judge(ctx, f)
	if err != nil {
		return fmt.Errorf("gpuhost-scan: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(cfg.ReportPrefix), 0o755); err != nil {
		return fmt.Errorf("gpuhost-scan: making the reports' directory: %w", err)
	}
	factsPath := cfg.ReportPrefix + ".scan.facts.json"
	if err := writeFile(factsPath, data); err != nil {
		return fmt.Errorf("gpuhost-scan: %w", err)
	}
	written, err := cfg.WriteReports(cfg.ReportPrefix, "scan", rep)
	if err != nil {
		return fmt.Errorf("gpuhost-scan: %w", err)
	}
	th := cfg.Thresholds()
	evaluation.Say(ui, "gpuhost-scan", rep, th)
	ui.Say("gpuhost-scan: reports: " + strings.Join(append(written, factsPath), ", "))
	name := "the build instance " + f.Target.Ref
	if err := evaluation.Verdict(rep, th); err != nil {
		return fmt.Errorf("gpuhost-scan: %s %w", name, err)
	}
	if code != 0 {
		// The CLI said its collection failed; facts that record no failed
		// collector contradict it, and a contradiction is not a pass.
		return fmt.Errorf("gpuhost-scan: %s: the facts command exited %d though the facts record no failed collector: %s", name, code, stderr)
	}
	ui.Say(fmt.Sprintf("gpuhost-scan: %s passes at fail_on %s", name, th.FailOn))
	return nil
}

// stage is where one run puts its files on the instance. The names are
// random, so that two builds on one instance, or a file planted in /tmp,
// never meet ours.
type stage struct {
	cli, facts string
}

func newStage(dir string) (*stage, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("naming the staged files: %w", err)
	}
	base := path.Join(dir, "gpuhost-scan-"+hex.EncodeToString(b[:]))
	return &stage{cli: base, facts: base + ".facts.json"}, nil
}

// collect uploads the CLI, runs execute_command and downloads the facts.
// It returns the document, the command's exit status and what it printed
// on stderr.
func (s *stage) collect(ctx context.Context, ui packersdk.Ui, comm packersdk.Communicator, cfg *Config) ([]byte, int, string, error) {
	ui.Say("gpuhost-scan: uploading " + cfg.GpuhostBinary + " to " + s.cli)
	if err := upload(comm, cfg.GpuhostBinary, s.cli); err != nil {
		return nil, 0, "", err
	}
	command, err := cfg.render(command{Path: s.cli, Args: shellQuote(cfg.FactsArgs), Output: s.facts})
	if err != nil {
		return nil, 0, "", fmt.Errorf("execute_command: %w", err)
	}
	ui.Say("gpuhost-scan: collecting facts on the instance: " + strings.Join(cfg.FactsArgs, " "))
	stderr := &limitedBuffer{max: maxStderr}
	code, err := run(ctx, comm, command, io.Discard, stderr)
	if err != nil {
		return nil, 0, "", fmt.Errorf("running %q: %w", command, err)
	}
	for _, line := range strings.Split(strings.TrimSpace(stderr.String()), "\n") {
		if line != "" {
			ui.Message("instance: " + line)
		}
	}
	// `facts` exits 2 when a collector failed, after printing the document
	// that says which; anything else is the command failing.
	if code != 0 && code != pipeline.ExitUntrusted {
		return nil, code, stderr.String(), fmt.Errorf("collecting facts on the instance: %q exited %d: %s", command, code, strings.TrimSpace(stderr.String()))
	}
	data, err := download(comm, s.facts, pipeline.MaxSavedDoc)
	if err != nil && code != 0 {
		return nil, code, stderr.String(), fmt.Errorf("downloading facts from %s after the facts command exited %d: %w: %s", s.facts, code, err, strings.TrimSpace(stderr.String()))
	}
	if err != nil {
		return nil, code, stderr.String(), fmt.Errorf("downloading facts from %s: %w", s.facts, err)
	}
	return data, code, strings.TrimSpace(stderr.String()), nil
}

// remove deletes the staged files, with a context of its own: a cancelled
// build must not leave the CLI in the image.
func (s *stage) remove(comm packersdk.Communicator) error {
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	stderr := &limitedBuffer{max: maxStderr}
	code, err := run(ctx, comm, "rm -f '"+s.cli+"' '"+s.facts+"'", io.Discard, stderr)
	if err == nil && code != 0 {
		err = fmt.Errorf("exit %d: %s", code, strings.TrimSpace(stderr.String()))
	}
	if err != nil {
		return fmt.Errorf("removing %s and %s from the instance: %w", s.cli, s.facts, err)
	}
	return nil
}

// decodeFacts checks the downloaded document against the facts schema
// before anything reads it: it comes from the instance, which is what is
// being judged.
func decodeFacts(data []byte, name string, code int, stderr string) (*facts.Facts, error) {
	if _, err := facts.DecodeJSON(data); err != nil {
		if code != 0 {
			return nil, fmt.Errorf("the facts command exited %d and left no valid facts document in %s (%v): %s", code, name, err, stderr)
		}
		return nil, fmt.Errorf("facts from %s: %w", name, err)
	}
	var f facts.Facts
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("facts from %s: %w", name, err)
	}
	if len(f.Collectors) == 0 {
		return nil, fmt.Errorf("facts from %s: collectors is empty: the document records no collector's outcome, so no check could be judged on it", name)
	}
	return &f, nil
}

// matchPackages fills the vulnerability facts as the gate does, with the
// same collector, over the dpkg status and os-release of the tree the facts
// were collected from, downloaded into a local mirror.
func (p *Provisioner) matchPackages(ctx context.Context, ui packersdk.Ui, comm packersdk.Communicator, f *facts.Facts) error {
	var root string
	switch f.Target.Kind {
	case facts.KindHost:
		root = hostRoot(p.config.FactsArgs)
	case facts.KindRootfs:
		root = f.Target.Ref
	default:
		return fmt.Errorf("trivy_db: the packages of a %s target cannot be downloaded from the instance", f.Target.Kind)
	}
	if !remotePath.MatchString(root) {
		return fmt.Errorf("trivy_db: the facts name the root %q, which is not an absolute path of plain characters", root)
	}
	tmp, err := os.MkdirTemp("", "gpuhost-scan-packages-")
	if err != nil {
		return fmt.Errorf("trivy_db: %w", err)
	}
	defer os.RemoveAll(tmp)
	names, err := listPackageFiles(ctx, comm, root)
	if err != nil {
		return fmt.Errorf("trivy_db: %w", err)
	}
	for _, name := range names {
		data, err := download(comm, path.Join(root, name), maxPackageFile)
		if err != nil {
			return fmt.Errorf("trivy_db: downloading %s: %w", path.Join(root, name), err)
		}
		dst := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return fmt.Errorf("trivy_db: %w", err)
		}
		if err := os.WriteFile(dst, data, 0o600); err != nil {
			return fmt.Errorf("trivy_db: %w", err)
		}
	}
	fsys, closer, err := sysroot.Open(tmp)
	if err != nil {
		return fmt.Errorf("trivy_db: %w", err)
	}
	defer closer.Close()
	ui.Say("gpuhost-scan: matching the instance's packages against " + p.config.TrivyDB)
	// The orchestrator runs the collector, so that a failure is recorded as
	// the gate would record it: the checks that need it error.
	// The copy holds no seeded images, so the containers collector finds
	// none there; what the instance seeds is in its own facts.
	vuln := p.Vulnerabilities(p.config.TrivyDB)
	got := target.Collect(ctx, &collect.Env{FS: fsys}, f.Target.Kind, f.Target.Ref,
		target.Options{Collectors: []collector.Collector{domains.Containers(), vuln}})
	f.Vulnerabilities = got.Vulnerabilities
	if f.Vulnerabilities != nil {
		f.Vulnerabilities.ImagesError = seededNotMatched(f)
	}
	st := got.Collectors[vuln.Name()]
	f.Record(vuln.Name(), st.Status, st.Reason)
	return nil
}

// seededNotMatched says why the instance's seeded images have no findings:
// only its own package files were fetched, and a base's layers (gigabytes
// for an NGC image) are not. GH-SC-001 is then an error, never a pass over
// bases no one matched; the gate's offline scan of the disk matches them.
func seededNotMatched(f *facts.Facts) string {
	if f.Containers == nil {
		return "the instance's facts do not list its seeded images, so none was matched"
	}
	if n := len(f.Containers.Images); n > 0 {
		return fmt.Sprintf("gpuhost-scan fetches only the instance's own package files, not the layers of its %d seeded images, "+
			"which were not matched: scan the disk with the gpuhost-gate post-processor or gpuhost scan image", n)
	}
	return ""
}

// packageFiles are what the vulnerability collector reads, relative to the
// target's root.
var packageFiles = []string{"var/lib/dpkg/status", "etc/os-release", "usr/lib/os-release"}

// listPackageFiles asks the instance which of packageFiles exist under
// root. The answer is untrusted: only names that were asked for are taken.
func listPackageFiles(ctx context.Context, comm packersdk.Communicator, root string) ([]string, error) {
	var quoted []string
	for _, name := range packageFiles {
		quoted = append(quoted, "'"+path.Join(root, name)+"'")
	}
	script := "for f in " + strings.Join(quoted, " ") + `; do if [ -f "$f" ]; then echo "$f"; fi; done; exit 0`
	out := &limitedBuffer{max: maxStderr}
	stderr := &limitedBuffer{max: maxStderr}
	code, err := run(ctx, comm, wrapScript(script), out, stderr)
	if err == nil && code != 0 {
		err = fmt.Errorf("exit %d: %s", code, strings.TrimSpace(stderr.String()))
	}
	if err != nil {
		return nil, fmt.Errorf("listing the package files under %s: %w", root, err)
	}
	var names []string
	for _, line := range strings.Fields(out.String()) {
		rel, ok := strings.CutPrefix(line, strings.TrimSuffix(root, "/")+"/")
		if !ok || !slices.Contains(packageFiles, rel) {
			return nil, fmt.Errorf("listing the package files under %s: the instance answered %q, which was not asked for", root, line)
		}
		names = append(names, rel)
	}
	return names, nil
}

// wrapScript ships a script base64-encoded, because communicators wrap a
// command in their own quoting (the SDK's chroot communicator puts it in
// double quotes, where "$f" would expand on the build machine).
func wrapScript(script string) string {
	return "echo " + base64.StdEncoding.EncodeToString([]byte(script)) + " | base64 -d | sh"
}

// run starts command and waits for it, or for ctx.
func run(ctx context.Context, comm packersdk.Communicator, command string, stdout, stderr io.Writer) (int, error) {
	cmd := &packersdk.RemoteCmd{Command: command, Stdout: stdout, Stderr: stderr}
	if err := comm.Start(ctx, cmd); err != nil {
		return 0, err
	}
	done := make(chan int, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case code := <-done:
		return code, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// upload copies the CLI to the instance as an executable only its owner
// may run.
func upload(comm packersdk.Communicator, local, remote string) error {
	f, err := os.Open(local)
	if err != nil {
		return fmt.Errorf("uploading the CLI: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("uploading the CLI: %w", err)
	}
	var fi os.FileInfo = ownerExecutable{info}
	if err := comm.Upload(remote, f, &fi); err != nil {
		return fmt.Errorf("uploading %s to %s: %w", local, remote, err)
	}
	return nil
}

// ownerExecutable is a file's info with mode 0700, the mode the
// communicators give the uploaded copy.
type ownerExecutable struct{ os.FileInfo }

func (ownerExecutable) Mode() os.FileMode { return 0o700 }

// download reads a file from the instance, refusing one over limit bytes.
func download(comm packersdk.Communicator, remote string, limit int64) ([]byte, error) {
	w := &limitedBuffer{max: limit, fail: true}
	err := comm.Download(remote, w)
	if w.truncated {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	if err != nil {
		return nil, err
	}
	return w.Bytes(), nil
}

// limitedBuffer keeps the first max bytes written to it and notes whether
// more came. Past the limit, a stream's output (fail unset) is dropped
// without an error, since the SSH session would report a failed write
// instead of the command's exit status; a download's write fails, so that
// the transfer stops there.
type limitedBuffer struct {
	mu        sync.Mutex
	b         bytes.Buffer
	max       int64
	fail      bool
	truncated bool
}

var errTooLarge = errors.New("over the size limit")

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	room := l.max - int64(l.b.Len())
	if int64(len(p)) <= room {
		return l.b.Write(p)
	}
	l.truncated = true
	l.b.Write(p[:max(room, 0)])
	if l.fail {
		return 0, errTooLarge
	}
	return len(p), nil
}

func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *limitedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Bytes()
}

// shellQuote joins args, each in single quotes, for a POSIX shell.
func shellQuote(args []string) string {
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(quoted, " ")
}

// writeFile writes data to name atomically, world-readable like the
// reports beside it: a temporary file in the same directory, synced, then
// renamed over name.
func writeFile(name string, data []byte) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(name), "."+filepath.Base(name)+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", name, err)
	}
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), name); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}
