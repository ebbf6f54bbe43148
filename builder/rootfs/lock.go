package rootfs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/gpuhost/gpuhost/facts/packages"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/manifest"
	"github.com/gpuhost/gpuhost/manifest/lock"
	"github.com/gpuhost/gpuhost/manifest/treedigest"
)

// lockPrefsName is the apt preferences file that makes each locked version
// the candidate while mmdebstrap resolves; it lives beside the rootfs for
// the bootstrap and in the tree only while mmdebstrap runs.
const (
	lockPrefsName   = "bootstrap-lock.pref"
	lockPrefsInTree = "etc/apt/preferences.d/zz-gpuhost-lock.pref"
	// treeDigestName is the file beside the output that holds the rootfs
	// tree's digest.
	treeDigestName = "tree-digest.txt"
)

// maxDpkgStatus bounds the bootstrapped tree's dpkg status, as the
// manifest does.
const maxDpkgStatus = 64 << 20

// stateTreeDigest is the rootfs tree's digest, "sha256:<hex>".
const stateTreeDigest = "tree_digest"

// lockPreferences returns apt preferences that pin every package of l to
// its version. Architecture-qualified names are only needed for a foreign
// architecture; apt takes the plain name for the native one and for all.
func lockPreferences(l *lock.Lock) []byte {
	var b strings.Builder
	for _, p := range l.Packages {
		name := p.Name
		if p.Arch != "all" && p.Arch != runtime.GOARCH {
			name += ":" + p.Arch
		}
		fmt.Fprintf(&b, "Package: %s\nPin: version %s\nPin-Priority: 1001\n\n", name, p.Version)
	}
	return []byte(b.String())
}

// lockPrefsSum is the sha256 of the bootstrap's lock preferences, "" without
// a lock: part of the bootstrap cache key, since it decides what is
// installed.
func lockPrefsSum(c *Config) string {
	if c.lock == nil {
		return ""
	}
	sum := sha256.Sum256(lockPreferences(c.lock))
	return hex.EncodeToString(sum[:])
}

// lockArgs are mmdebstrap's hooks that put the lock's preferences (written
// to prefs beforehand) in the tree for the bootstrap and take them out.
func lockArgs(prefs string) []string {
	return []string{
		`--setup-hook=mkdir -p "$1/etc/apt/preferences.d" && cp ` + shellQuote(prefs) + ` "$1/` + lockPrefsInTree + `"`,
		`--customize-hook=rm -f "$1/` + lockPrefsInTree + `"`,
	}
}

// writeLockPrefs writes the preferences the lock hooks copy, beside rootfs.
func writeLockPrefs(c *Config, rootfs string) error {
	if c.lock == nil {
		return nil
	}
	return os.WriteFile(filepath.Join(filepath.Dir(rootfs), lockPrefsName), lockPreferences(c.lock), 0o644)
}

// stepLockCheck holds the bootstrapped tree to lock_file: every package in
// it must be in the lock at its locked version and, where the apt cache
// keeps the .deb, hash to the locked sha256. The provisioner's plan checks
// the final inventory whole, with every .deb digest.
type stepLockCheck struct{}

func (s *stepLockCheck) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	ui := state.Get(stateUI).(packersdk.Ui)
	rootfs := state.Get(stateRootfs).(string)
	inv, err := bootstrapInventory(rootfs, c.AptCacheDir)
	if err != nil {
		return halt(state, fmt.Errorf("lock_file: %w", err))
	}
	if problems := c.lock.Check(inv, false); len(problems) > 0 {
		return halt(state, fmt.Errorf("lock_file: the bootstrap differs from the lock %s:\n  %s", c.LockFile, strings.Join(problems, "\n  ")))
	}
	ui.Say(fmt.Sprintf("Bootstrap matches the lock %s: %d packages", c.LockFile, len(inv)))
	return multistep.ActionContinue
}

func (s *stepLockCheck) Cleanup(multistep.StateBag) {}

// bootstrapInventory reads the installed packages of the tree at rootfs,
// each with the sha256 of its .deb where aptCache holds one.
func bootstrapInventory(rootfs, aptCache string) ([]lock.Package, error) {
	fsys, closer, err := sysroot.Open(rootfs)
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	data, err := fsys.ReadFileLimit(manifest.DpkgStatus, maxDpkgStatus)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", manifest.DpkgStatus, err)
	}
	installed, err := packages.ParseDpkgStatus(data)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", manifest.DpkgStatus, err)
	}
	var inv []lock.Package
	for _, p := range installed {
		lp := lock.Package{Name: p.Name, Version: p.Version, Arch: p.Arch}
		if aptCache != "" {
			// apt names a downloaded .deb NAME_VERSION_ARCH.deb, with the
			// epoch's colon escaped.
			deb := filepath.Join(aptCache, p.Name+"_"+strings.ReplaceAll(p.Version, ":", "%3a")+"_"+p.Arch+".deb")
			if lp.SHA256, err = fileSHA256(deb); err != nil {
				return nil, err
			}
		}
		inv = append(inv, lp)
	}
	return inv, nil
}

// fileSHA256 returns the hex sha256 of the regular file name, or "" when
// there is none.
func fileSHA256(name string) (string, error) {
	fi, err := os.Lstat(name)
	if os.IsNotExist(err) || (err == nil && !fi.Mode().IsRegular()) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	f, err := os.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("reading %s: %w", name, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// stepTreeDigest records the digest of the finished tree (see
// manifest/treedigest): in the artifact, and in tree-digest.txt beside the
// output. It runs with nothing mounted, after every change to the tree.
type stepTreeDigest struct{}

func (s *stepTreeDigest) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	ui := state.Get(stateUI).(packersdk.Ui)
	rootfs := state.Get(stateRootfs).(string)
	d, err := treedigest.Digest(rootfs, treedigest.Options{Exclude: treedigest.BuildExcludes})
	if err != nil {
		return halt(state, err)
	}
	if err := manifest.WriteFileAtomic(filepath.Join(c.OutputDir, treeDigestName), []byte(d+"\n"), 0o644); err != nil {
		return halt(state, err)
	}
	state.Put(stateTreeDigest, d)
	ui.Say("rootfs tree digest " + d)
	return multistep.ActionContinue
}

func (s *stepTreeDigest) Cleanup(multistep.StateBag) {}
