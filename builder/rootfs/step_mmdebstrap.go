package rootfs

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
)

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

// bootstrapEnv is what mmdebstrap's package scripts find in their
// environment beyond the plugin's own. For a build that makes its own
// initramfs (an encrypted disk), the kernel's initramfs hooks are told to skip
// (INITRD=No, as initrdOff tells the provisioners' hooks): the generic
// initramfs a bootstrapped kernel's postinst makes would be replaced by
// stepLUKSInitramfs's, and it is most of a small bootstrap's time.
func bootstrapEnv(c *Config) []string {
	if c.encryptedDisk() {
		return []string{"INITRD=No"}
	}
	return nil
}

// stepMmdebstrap bootstraps the rootfs. mmdebstrap runs as PID 1 of private
// mount and PID namespaces (see mountns.go), so its own mounts and any
// process it leaves behind go away with it, even when the plugin is killed.
type stepMmdebstrap struct{}

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
	cmd.Env = append(os.Environ(), bootstrapEnv(c)...)
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
