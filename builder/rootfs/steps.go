package rootfs

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/packer-plugin-sdk/common"
	"github.com/hashicorp/packer-plugin-sdk/multistep"
	"github.com/hashicorp/packer-plugin-sdk/multistep/commonsteps"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
)

// State bag keys the steps share.
const (
	stateConfig  = "config"
	stateUI      = "ui"
	stateHook    = "hook"
	stateRootfs  = "rootfs"  // string: the rootfs directory
	stateMountNS = "mountns" // *mountNS while mounts are up
	stateWrapper = "wrappedCommand"
	stateFiles   = "output_files" // []string: what the artifact consists of
)

// halt records err in the state, shows it and halts the build.
func halt(state multistep.StateBag, err error) multistep.StepAction {
	state.Put("error", err)
	state.Get(stateUI).(packersdk.Ui).Error(err.Error())
	return multistep.ActionHalt
}

// removeTree removes dir, but refuses when anything is mounted under it in
// this process's namespace: RemoveAll through a bind of /dev would empty the
// machine's /dev.
func removeTree(dir string) error {
	left, err := mountsUnder(dir)
	if err != nil {
		return err
	}
	if len(left) > 0 {
		return fmt.Errorf("not removing %s: still mounted: %s", dir, strings.Join(left, ", "))
	}
	return os.RemoveAll(dir)
}

// stepPrepareDirs makes the output and work directories. An existing output
// is an error unless Packer runs with -force. A cancelled or failed build
// removes what it made, as Packer's own builders do.
type stepPrepareDirs struct {
	made []string
}

func (s *stepPrepareDirs) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	rootfs := filepath.Join(c.WorkDir, "rootfs")
	for _, dir := range []string{c.OutputDir, rootfs} {
		if _, err := os.Lstat(dir); err == nil {
			if !c.PackerForce {
				return halt(state, fmt.Errorf("%s exists; remove it or run packer build -force", dir))
			}
			if err := removeTree(dir); err != nil {
				return halt(state, err)
			}
		}
	}
	for _, dir := range []string{c.OutputDir, c.WorkDir} {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return halt(state, err)
			}
			s.made = append(s.made, dir)
		}
	}
	state.Put(stateRootfs, rootfs)
	return multistep.ActionContinue
}

func (s *stepPrepareDirs) Cleanup(state multistep.StateBag) {
	_, cancelled := state.GetOk(multistep.StateCancelled)
	_, halted := state.GetOk(multistep.StateHalted)
	if !cancelled && !halted {
		return
	}
	ui := state.Get(stateUI).(packersdk.Ui)
	if rootfs, ok := state.GetOk(stateRootfs); ok {
		if err := removeTree(rootfs.(string)); err != nil {
			ui.Error(err.Error())
		}
	}
	for i := len(s.made) - 1; i >= 0; i-- {
		ui.Say("Removing " + s.made[i])
		if err := removeTree(s.made[i]); err != nil {
			ui.Error(err.Error())
		}
	}
}

// unsafeIOConf is the dpkg configuration that lives only while mmdebstrap
// runs.
const unsafeIOConf = "etc/dpkg/dpkg.cfg.d/99gpuhost-bootstrap-unsafe-io"

// mmdebstrapArgs returns mmdebstrap's arguments for c, building into rootfs.
func mmdebstrapArgs(c *Config, rootfs string) []string {
	args := []string{
		"--mode=root",
		"--variant=" + c.Variant,
		"--components=" + strings.Join(c.Components, ","),
	}
	if pkgs := c.bootstrapPackages(); len(pkgs) > 0 {
		args = append(args, "--include="+strings.Join(pkgs, ","))
	}
	if c.Keyring != "" {
		args = append(args, "--keyring="+c.Keyring)
	}
	if c.Snapshot != "" {
		args = append(args, `--aptopt=Acquire::Check-Valid-Until "false"`)
	}
	// Keep the package lists mmdebstrap fetched: the provisioners' first
	// apt-get update then gets "not modified" for them instead of
	// downloading every Packages index a second time (several megabytes
	// for bookworm). The image ends up with
	// lists either way once a provisioner runs apt-get update.
	args = append(args, "--skip=cleanup/apt/lists")
	// dpkg fsyncs every file it unpacks; for a tree that is packed into an
	// image afterwards (and rebuilt from scratch if the machine crashes)
	// that buys nothing and slows the bootstrap down. A hook, not
	// --dpkgopt, which mmdebstrap would leave in the image for good.
	args = append(args,
		`--setup-hook=mkdir -p "$1/etc/dpkg/dpkg.cfg.d" && echo force-unsafe-io >"$1/`+unsafeIOConf+`"`,
		`--customize-hook=rm -f "$1/`+unsafeIOConf+`"`,
	)
	if c.AptCacheDir != "" {
		// The cache is bind-mounted before anything is downloaded and
		// unmounted before mmdebstrap's cleanup, which would empty it.
		// essential/unlink would delete the essential packages from it.
		args = append(args,
			"--skip=essential/unlink",
			`--setup-hook=mkdir -p "$1/var/cache/apt/archives" && mount --bind `+shellQuote(c.AptCacheDir)+` "$1/var/cache/apt/archives"`,
			`--customize-hook=umount "$1/var/cache/apt/archives"`,
		)
	}
	if c.lock != nil {
		args = append(args, lockArgs(filepath.Join(filepath.Dir(rootfs), lockPrefsName))...)
	}
	return append(args, c.Suite, rootfs, c.Mirror)
}

// stepMmdebstrap bootstraps the rootfs. mmdebstrap runs as PID 1 of private
// mount and PID namespaces (see mountns.go), so its own mounts and any
// process it leaves behind go away with it, even when the plugin is killed.
type stepMmdebstrap struct{}

func (s *stepMmdebstrap) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	ui := state.Get(stateUI).(packersdk.Ui)
	rootfs := state.Get(stateRootfs).(string)
	if c.Mirror == "" {
		return halt(state, c.mirrorErr)
	}
	if c.AptCacheDir != "" {
		if err := os.MkdirAll(c.AptCacheDir, 0o755); err != nil {
			return halt(state, fmt.Errorf("apt_cache_dir: %w", err))
		}
	}
	if cacheHit(state) {
		ui.Say(fmt.Sprintf("Bootstrapping %s %s (%s) from %s (extracted from the bootstrap cache)", c.Distribution, c.Suite, c.Variant, c.Mirror))
		return multistep.ActionContinue
	}
	if err := writeLockPrefs(c, rootfs); err != nil {
		return halt(state, fmt.Errorf("lock_file: %w", err))
	}
	args := mmdebstrapArgs(c, rootfs)
	ui.Say(fmt.Sprintf("Bootstrapping %s %s (%s) from %s", c.Distribution, c.Suite, c.Variant, c.Mirror))
	cmd := exec.CommandContext(ctx, "/bin/sh", append([]string{"-c", makePrivate + `exec mmdebstrap "$@"`, "mmdebstrap"}, args...)...)
	cmd.SysProcAttr = privateNSAttr()
	if err := runStreaming(cmd, ui); err != nil {
		if ctx.Err() != nil {
			return halt(state, fmt.Errorf("mmdebstrap: cancelled"))
		}
		return halt(state, fmt.Errorf("mmdebstrap %s: %w", strings.Join(args, " "), err))
	}
	return multistep.ActionContinue
}

func (s *stepMmdebstrap) Cleanup(multistep.StateBag) {}

// runStreaming runs cmd, showing each line of its output as a message.
func runStreaming(cmd *exec.Cmd, ui packersdk.Ui) error {
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			ui.Message(sc.Text())
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	log.Printf("running %s", strings.Join(cmd.Args, " "))
	err := cmd.Run()
	pw.Close()
	wg.Wait()
	return err
}

// policyRcD makes invoke-rc.d refuse to start services while packages are
// installed in the rootfs: they would run on the build machine.
const policyRcD = "#!/bin/sh\n# written by the gpuhost rootfs builder for the build only\nexit 101\n"

// stepPolicyRcD writes /usr/sbin/policy-rc.d, keeping any existing one aside,
// and restores the original state in Cleanup.
type stepPolicyRcD struct {
	saved []byte
	had   bool
	wrote bool
}

const policyRcDPath = "usr/sbin/policy-rc.d"

func (s *stepPolicyRcD) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	root, err := os.OpenRoot(state.Get(stateRootfs).(string))
	if err != nil {
		return halt(state, err)
	}
	defer root.Close()
	if data, err := root.ReadFile(policyRcDPath); err == nil {
		s.saved, s.had = data, true
	}
	if err := root.MkdirAll("usr/sbin", 0o755); err != nil {
		return halt(state, fmt.Errorf("writing /%s: %w", policyRcDPath, err))
	}
	if err := root.WriteFile(policyRcDPath, []byte(policyRcD), 0o755); err != nil {
		return halt(state, fmt.Errorf("writing /%s: %w", policyRcDPath, err))
	}
	if err := root.Chmod(policyRcDPath, 0o755); err != nil {
		return halt(state, fmt.Errorf("writing /%s: %w", policyRcDPath, err))
	}
	s.wrote = true
	return multistep.ActionContinue
}

func (s *stepPolicyRcD) Cleanup(state multistep.StateBag) {
	if err := s.cleanupNow(state); err != nil {
		state.Get(stateUI).(packersdk.Ui).Error(err.Error())
	}
}

func (s *stepPolicyRcD) cleanupNow(state multistep.StateBag) error {
	if !s.wrote {
		return nil
	}
	s.wrote = false
	root, err := os.OpenRoot(state.Get(stateRootfs).(string))
	if err != nil {
		return err
	}
	defer root.Close()
	if s.had {
		err = root.WriteFile(policyRcDPath, s.saved, 0o755)
	} else {
		err = root.Remove(policyRcDPath)
	}
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("restoring /%s: %w", policyRcDPath, err)
	}
	return nil
}

// stepMount makes the configured mounts in a private namespace held by a
// helper process (see mountns.go) and unmounts them in Cleanup, which Packer
// runs on success, failure and Ctrl-C alike.
type stepMount struct {
	Mounts      []string
	AptCacheDir string
	ns          *mountNS
}

func (s *stepMount) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	ui := state.Get(stateUI).(packersdk.Ui)
	rootfs := state.Get(stateRootfs).(string)
	plans, err := planMounts(rootfs, s.Mounts, s.AptCacheDir)
	if err != nil {
		return halt(state, err)
	}
	ns, err := startMountNS(ctx, rootfs, plans)
	if err != nil {
		return halt(state, err)
	}
	s.ns = ns
	for _, m := range ns.Mounts() {
		ui.Message("Mounted " + m)
	}
	state.Put(stateMountNS, ns)
	state.Put(stateWrapper, common.CommandWrapper(ns.Wrap))
	return multistep.ActionContinue
}

func (s *stepMount) Cleanup(state multistep.StateBag) {
	if err := s.cleanupNow(state); err != nil {
		state.Get(stateUI).(packersdk.Ui).Error(err.Error())
	}
}

func (s *stepMount) cleanupNow(state multistep.StateBag) error {
	if s.ns == nil {
		return nil
	}
	state.Get(stateUI).(packersdk.Ui).Say("Unmounting " + strings.Join(s.ns.Mounts(), ", "))
	err := s.ns.Close()
	s.ns = nil
	state.Remove(stateMountNS)
	state.Remove(stateWrapper)
	return err
}

// earlyCleaner is a step whose Cleanup can run before the build ends.
type earlyCleaner interface {
	cleanupNow(multistep.StateBag) error
}

// stepEarlyCleanup undoes the mount and policy-rc.d steps before packing;
// a failure halts the build rather than pack a rootfs in an unknown state.
type stepEarlyCleanup struct {
	cleaners []earlyCleaner
}

func (s *stepEarlyCleanup) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	var errs []error
	for _, c := range s.cleaners {
		if err := c.cleanupNow(state); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return halt(state, err)
	}
	return multistep.ActionContinue
}

func (s *stepEarlyCleanup) Cleanup(multistep.StateBag) {}

// stepProvision runs the provisioners through the chroot communicator.
type stepProvision struct{}

func (s *stepProvision) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	ui := state.Get(stateUI).(packersdk.Ui)
	hook := state.Get(stateHook).(packersdk.Hook)
	rootfs := state.Get(stateRootfs).(string)
	ns := state.Get(stateMountNS).(*mountNS)
	comm := newCommunicator(rootfs, fmt.Sprintf("/proc/%d/root%s", ns.PID(), rootfs), ns.Wrap)
	state.Put("communicator", comm)
	hookData := commonsteps.PopulateProvisionHookData(state)
	state.Put("generated_data", hookData)
	if err := hook.Run(ctx, packersdk.HookProvision, ui, comm, hookData); err != nil {
		return halt(state, err)
	}
	return multistep.ActionContinue
}

func (s *stepProvision) Cleanup(multistep.StateBag) {}

// stepPack writes the output format. dir needs nothing; tar uses GNU tar,
// which keeps hard links, device nodes, ownership and xattrs (file
// capabilities); raw and qcow2 use mkfs.ext4 -d, which needs no loop device.
type stepPack struct{}

func (s *stepPack) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	ui := state.Get(stateUI).(packersdk.Ui)
	rootfs := state.Get(stateRootfs).(string)
	var files []string
	run := func(name string, args ...string) error {
		cmd := exec.CommandContext(ctx, name, args...)
		if err := runStreaming(cmd, ui); err != nil {
			return fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
		}
		return nil
	}
	mkfs := func(img string) error {
		f, err := os.Create(img)
		if err != nil {
			return err
		}
		f.Close()
		size, _ := parseSize(c.ImageSize)
		if err := os.Truncate(img, size); err != nil {
			return err
		}
		return run("mkfs.ext4", "-q", "-F", "-L", "rootfs", "-d", rootfs, img, c.ImageSize)
	}
	var err error
	switch c.OutputFormat {
	case "dir":
		files = []string{rootfs}
	case "tar":
		out := filepath.Join(c.OutputDir, "rootfs.tar.zst")
		ui.Say("Packing " + out)
		err = run("tar", "--create", "--zstd", "--file", out, "--numeric-owner", "--xattrs", "--xattrs-include=*", "--sort=name", "-C", rootfs, ".")
		files = []string{out}
	case "raw":
		out := filepath.Join(c.OutputDir, "rootfs.raw")
		ui.Say("Writing an ext4 image " + out)
		err = mkfs(out)
		files = []string{out}
	case "qcow2":
		out := filepath.Join(c.OutputDir, "rootfs.qcow2")
		raw := filepath.Join(c.WorkDir, "rootfs.raw.tmp")
		ui.Say("Writing a qcow2 image " + out)
		err = mkfs(raw)
		if err == nil {
			// -m and -W let qemu-img compress clusters on every core and
			// write them as they finish; compression is most of the pack
			// step, and the image reads the same (qemu-img compare).
			err = run("qemu-img", "convert", "-c", "-m", "16", "-W", "-O", "qcow2", raw, out)
		}
		os.Remove(raw)
		files = []string{out}
	}
	if err != nil {
		return halt(state, err)
	}
	if c.RemoveRootfs {
		if err := removeTree(rootfs); err != nil {
			return halt(state, err)
		}
		state.Remove(stateRootfs)
	}
	state.Put(stateFiles, files)
	return multistep.ActionContinue
}

func (s *stepPack) Cleanup(multistep.StateBag) {}

// parseSize reads "4G"-style sizes (binary units, as mkfs.ext4 reads them).
func parseSize(s string) (int64, error) {
	if !sizeRE.MatchString(s) {
		return 0, fmt.Errorf("invalid size %q", s)
	}
	mult := int64(1)
	switch s[len(s)-1] {
	case 'K':
		mult = 1 << 10
	case 'M':
		mult = 1 << 20
	case 'G':
		mult = 1 << 30
	case 'T':
		mult = 1 << 40
	}
	num := strings.TrimRight(s, "KMGT")
	var n int64
	for _, ch := range num {
		if n > (1<<62)/10 {
			return 0, fmt.Errorf("size %q is too large", s)
		}
		n = n*10 + int64(ch-'0')
	}
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("size %q is too large", s)
	}
	return n * mult, nil
}

// timedStep runs a step and records how long its Run took.
type timedStep struct {
	name string
	step multistep.Step
	t    *timings
}

func (s *timedStep) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	start := time.Now()
	defer func() { s.t.add(s.name, time.Since(start)) }()
	return s.step.Run(ctx, state)
}

func (s *timedStep) Cleanup(state multistep.StateBag) { s.step.Cleanup(state) }

// timings collects step durations in the order the steps ran.
type timings struct {
	mu    sync.Mutex
	names []string
	durs  []time.Duration
}

func (t *timings) add(name string, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.names = append(t.names, name)
	t.durs = append(t.durs, d)
}

// table renders the timings as an aligned two-column table with a total.
func (t *timings) table() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	var total time.Duration
	w := 12
	for _, n := range t.names {
		w = max(w, len(n))
	}
	fmt.Fprintf(&b, "%-*s %9s\n", w, "step", "seconds")
	for i, n := range t.names {
		fmt.Fprintf(&b, "%-*s %9.1f\n", w, n, t.durs[i].Seconds())
		total += t.durs[i]
	}
	fmt.Fprintf(&b, "%-*s %9.1f", w, "total", total.Seconds())
	return b.String()
}
