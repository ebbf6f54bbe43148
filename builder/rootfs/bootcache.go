package rootfs

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
)

// The bootstrap cache keeps the tree mmdebstrap made, as a zstd tarball,
// so that a rebuild with the same inputs extracts it instead of
// bootstrapping again (most of a rebuild's time when packages are cached).
// An entry is named KEY-SUM.tar.zst: KEY hashes the inputs (bootstrapKey),
// SUM is the tarball's own SHA-256, checked before every use; one rename
// publishes both, so a reader never sees half an entry.

// Bounds of the bootstrap cache.
const (
	// bootstrapCacheKeep is how many entries survive a prune, newest first.
	bootstrapCacheKeep = 4
	// maxCacheDirEntries bounds the directory listing a lookup or prune reads.
	maxCacheDirEntries = 4096
	// maxReleaseBytes bounds the mirror's InRelease file (bookworm's is 150 KB).
	maxReleaseBytes = 16 << 20
	// maxKeyringFiles and maxKeyringBytes bound hashing a keyring directory.
	maxKeyringFiles = 256
	maxKeyringBytes = 16 << 20
	// releaseTimeout bounds fetching the mirror's InRelease file.
	releaseTimeout = 30 * time.Second
	// staleTempAge is when a temporary file of a build that died is removed.
	staleTempAge = 24 * time.Hour
	// cacheKeyVersion changes when the entry format or key inputs change.
	cacheKeyVersion = "gpuhost-bootstrap-cache/v1"
)

// State bag keys of the bootstrap cache steps.
const (
	stateCacheKey     = "bootstrap_cache_key"     // string: the key, when the cache is usable
	stateCacheHit     = "bootstrap_cache_hit"     // bool: the rootfs came from the cache
	stateCacheRelease = "bootstrap_cache_release" // string: sha256 of the InRelease the key used
)

var entryRE = regexp.MustCompile(`^([0-9a-f]{64})-([0-9a-f]{64})\.tar\.zst$`)

// tarXattrs makes tar keep ownership by number and every extended attribute
// (file capabilities), as the tar output format does.
var tarXattrs = []string{"--numeric-owner", "--xattrs", "--xattrs-include=*"}

// mmdebstrapVersion returns `mmdebstrap --version`; tests replace it.
var mmdebstrapVersion = func(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "mmdebstrap", "--version").Output()
	if err != nil {
		return "", fmt.Errorf("mmdebstrap --version: %w", err)
	}
	return strings.TrimSpace(string(out)), nil
}

// bootstrapKey returns the cache key of a bootstrap of c by mmdebstrap
// version, from a mirror whose InRelease file has the SHA-256 release.
// The arguments are mmdebstrap's own, so that any option or hook the
// builder passes is part of the key; the rootfs path and the apt cache are
// left out, since the tree does not depend on where it is built or on
// where downloads are kept.
func bootstrapKey(c *Config, version, release, keyring string) string {
	k := *c
	k.AptCacheDir = ""
	k.ExtraPackages = slices.Sorted(slices.Values(c.ExtraPackages))
	h := sha256.New()
	field := func(name string, vals ...string) {
		// Quoting keeps values apart: no two inputs hash the same text.
		fmt.Fprintf(h, "%s %q\n", name, vals)
	}
	field("version", cacheKeyVersion)
	field("distribution", c.Distribution)
	field("suite", c.Suite)
	field("variant", c.Variant)
	field("components", c.Components...)
	field("architecture", runtime.GOARCH)
	field("packages", slices.Sorted(slices.Values(k.bootstrapPackages()))...)
	field("keyring", c.Keyring, keyring)
	field("mirror", c.Mirror)
	field("snapshot", c.Snapshot)
	field("mmdebstrap", version)
	field("args", mmdebstrapArgs(&k, "ROOTFS")...)
	field("env", bootstrapEnv(&k)...)
	field("release", release)
	field("lock", lockPrefsSum(c))
	return hex.EncodeToString(h.Sum(nil))
}

// mirrorRelease returns the SHA-256 of the InRelease file (or, failing
// that, the Release file) that mirror serves for suite.
func mirrorRelease(ctx context.Context, mirror, suite string) (string, error) {
	u, err := url.Parse(mirror)
	if err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, releaseTimeout)
	defer cancel()
	var errs []error
	for _, name := range []string{"InRelease", "Release"} {
		var data []byte
		var err error
		switch u.Scheme {
		case "file":
			data, err = readFileBounded(filepath.Join(u.Path, "dists", suite, name), maxReleaseBytes)
		case "http", "https":
			data, err = httpGetBounded(ctx, strings.TrimSuffix(mirror, "/")+"/dists/"+suite+"/"+name)
		default:
			return "", fmt.Errorf("mirror %q: unsupported scheme", mirror)
		}
		if err == nil {
			sum := sha256.Sum256(data)
			return hex.EncodeToString(sum[:]), nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return "", errors.Join(errs...)
}

func httpGetBounded(ctx context.Context, u string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxReleaseBytes+1))
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", u, err)
	}
	if len(data) > maxReleaseBytes {
		return nil, fmt.Errorf("GET %s: larger than %d bytes", u, maxReleaseBytes)
	}
	return data, nil
}

// readFileBounded reads name, refusing one larger than limit bytes.
func readFileBounded(name string, limit int64) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("reading %s: larger than %d bytes", name, limit)
	}
	return data, nil
}

// keyringSum hashes the keyring file, or the regular files of the keyring
// directory, so that a changed key changes the cache key. It returns "" for
// no keyring.
func keyringSum(keyring string) (string, error) {
	if keyring == "" {
		return "", nil
	}
	fi, err := os.Stat(keyring)
	if err != nil {
		return "", err
	}
	files := []string{keyring}
	if fi.IsDir() {
		entries, err := os.ReadDir(keyring)
		if err != nil {
			return "", err
		}
		if len(entries) > maxKeyringFiles {
			return "", fmt.Errorf("keyring %s: more than %d files", keyring, maxKeyringFiles)
		}
		files = files[:0]
		for _, e := range entries {
			if e.Type().IsRegular() {
				files = append(files, filepath.Join(keyring, e.Name()))
			}
		}
	}
	h := sha256.New()
	for _, f := range files {
		data, err := readFileBounded(f, maxKeyringBytes)
		if err != nil {
			return "", err
		}
		sum := sha256.Sum256(data)
		fmt.Fprintf(h, "%q %x\n", filepath.Base(f), sum)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// cacheEntry is one tarball of the cache directory.
type cacheEntry struct {
	path, key, sum string
	mod            time.Time
}

// cacheEntries lists the entries of dir, newest first, and the temporary
// files left by builds that died long ago.
func cacheEntries(dir string) (entries []cacheEntry, stale []string, err error) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	defer d.Close()
	list, err := d.ReadDir(maxCacheDirEntries)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	for _, e := range list {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if strings.HasPrefix(e.Name(), ".tmp-") && time.Since(info.ModTime()) > staleTempAge {
			stale = append(stale, filepath.Join(dir, e.Name()))
		}
		m := entryRE.FindStringSubmatch(e.Name())
		if m == nil {
			continue
		}
		entries = append(entries, cacheEntry{path: filepath.Join(dir, e.Name()), key: m[1], sum: m[2], mod: info.ModTime()})
	}
	slices.SortFunc(entries, func(a, b cacheEntry) int { return b.mod.Compare(a.mod) })
	return entries, stale, nil
}

// pruneCache keeps the newest keep entries of dir.
func pruneCache(dir string, keep int) error {
	entries, stale, err := cacheEntries(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range stale {
		errs = append(errs, os.Remove(s))
	}
	if len(entries) > keep {
		for _, e := range entries[keep:] {
			errs = append(errs, os.Remove(e.path))
		}
	}
	return errors.Join(errs...)
}

// openVerified opens the entry and checks its SHA-256 against its name. The
// returned file is positioned at the start; it stays valid even if another
// build prunes the entry meanwhile.
func openVerified(e cacheEntry) (*os.File, error) {
	f, err := os.Open(e.path)
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		f.Close()
		return nil, fmt.Errorf("reading %s: %w", e.path, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != e.sum {
		f.Close()
		return nil, fmt.Errorf("%s: checksum %s does not match its name", e.path, got)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// extractEntry fills rootfs, a directory the caller just made, from the
// tarball f.
func extractEntry(ctx context.Context, f *os.File, rootfs string) error {
	// A fresh empty directory, a verified tarball this builder wrote, and
	// GNU tar's refusal of ".." members keep extraction inside rootfs.
	args := append([]string{"--extract", "--zstd", "--preserve-permissions", "--file", "-"}, tarXattrs...)
	cmd := exec.CommandContext(ctx, "tar", append(args, "-C", rootfs)...)
	cmd.Stdin = f
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("tar %s: %w: %s", strings.Join(cmd.Args[1:], " "), err, bytesTail(out))
	}
	return nil
}

// saveEntry packs rootfs into dir as the entry of key, and returns its path.
func saveEntry(ctx context.Context, dir, key, rootfs string) (string, error) {
	tmp, err := os.CreateTemp(dir, ".tmp-"+key[:16]+"-")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	defer tmp.Close()
	h := sha256.New()
	// zstd on every core: packing is on the cold build's path.
	args := append([]string{"--create", "--use-compress-program=zstd -T0 -3", "--file", "-", "--sort=name"}, tarXattrs...)
	cmd := exec.CommandContext(ctx, "tar", append(args, "-C", rootfs, ".")...)
	cmd.Stdout = io.MultiWriter(tmp, h)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("tar %s: %w: %s", strings.Join(cmd.Args[1:], " "), err, bytesTail([]byte(stderr.String())))
	}
	// No fsync: an entry torn by a crash fails its checksum and is
	// discarded, and the cold build does not wait on the disk.
	if err := tmp.Close(); err != nil {
		return "", err
	}
	final := filepath.Join(dir, key+"-"+hex.EncodeToString(h.Sum(nil))+".tar.zst")
	if err := os.Rename(tmp.Name(), final); err != nil {
		return "", err
	}
	return final, nil
}

// bytesTail returns the last line-ish part of a command's output for an error.
func bytesTail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 500 {
		s = "..." + s[len(s)-500:]
	}
	return s
}

// treeRelease returns the SHA-256 of the InRelease (or Release) file apt
// kept in rootfs for suite, or "" when there is none: mmdebstrap runs with
// --skip=cleanup/apt/lists, so the lists show which archive state the tree
// was really built from.
func treeRelease(rootfs, suite string) string {
	for _, name := range []string{"InRelease", "Release"} {
		matches, _ := filepath.Glob(filepath.Join(rootfs, "var/lib/apt/lists", "*_dists_"+suite+"_"+name))
		if len(matches) != 1 {
			continue
		}
		fi, err := os.Lstat(matches[0])
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		data, err := readFileBounded(matches[0], maxReleaseBytes)
		if err != nil {
			continue
		}
		sum := sha256.Sum256(data)
		return hex.EncodeToString(sum[:])
	}
	return ""
}

// stepBootstrapCacheLookup computes the cache key and, on a hit, extracts
// the cached tree as the rootfs; stepMmdebstrap then does nothing. Any
// trouble with the cache is reported and the build bootstraps afresh: the
// cache can make a build faster, never make it fail.
type stepBootstrapCacheLookup struct{}

func (s *stepBootstrapCacheLookup) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	if c.BootstrapCacheDir == "" || c.Mirror == "" {
		return multistep.ActionContinue
	}
	ui := state.Get(stateUI).(packersdk.Ui)
	rootfs := state.Get(stateRootfs).(string)
	skip := func(format string, args ...any) multistep.StepAction {
		ui.Say("Bootstrap cache not used: " + fmt.Sprintf(format, args...))
		return multistep.ActionContinue
	}
	if err := os.MkdirAll(c.BootstrapCacheDir, 0o755); err != nil {
		return skip("%v", err)
	}
	release, err := mirrorRelease(ctx, c.Mirror, c.Suite)
	if err != nil {
		return skip("cannot read the mirror's Release file, so cannot tell whether the mirror changed: %v", err)
	}
	version, err := mmdebstrapVersion(ctx)
	if err != nil {
		return skip("%v", err)
	}
	keyring, err := keyringSum(c.Keyring)
	if err != nil {
		return skip("keyring: %v", err)
	}
	key := bootstrapKey(c, version, release, keyring)
	state.Put(stateCacheKey, key)
	state.Put(stateCacheRelease, release)
	entries, _, err := cacheEntries(c.BootstrapCacheDir)
	if err != nil {
		return skip("%v", err)
	}
	for _, e := range entries {
		if e.key != key {
			continue
		}
		// The dirs step removed any earlier rootfs; one that is there now
		// is not ours to extract into or to remove.
		if err := os.Mkdir(rootfs, 0o755); err != nil {
			return skip("%v", err)
		}
		f, err := openVerified(e)
		if err != nil {
			ui.Error(fmt.Sprintf("Bootstrap cache entry discarded: %v", err))
			if rerr := os.Remove(e.path); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				ui.Error(rerr.Error())
			}
			if rerr := os.Remove(rootfs); rerr != nil {
				return halt(state, fmt.Errorf("removing the empty rootfs: %w", rerr))
			}
			continue
		}
		err = extractEntry(ctx, f, rootfs)
		f.Close()
		if err != nil {
			ui.Error(fmt.Sprintf("Bootstrap cache entry %s not used: %v", e.path, err))
			if rerr := removeTree(rootfs); rerr != nil {
				return halt(state, fmt.Errorf("removing a partly extracted rootfs: %w", rerr))
			}
			continue
		}
		// The newest entries survive a prune; a hit counts as new.
		now := time.Now()
		_ = os.Chtimes(e.path, now, now)
		ui.Say(fmt.Sprintf("bootstrap cache hit %s (%s)", key, e.path))
		state.Put(stateCacheHit, true)
		return multistep.ActionContinue
	}
	ui.Say(fmt.Sprintf("bootstrap cache miss %s", key))
	return multistep.ActionContinue
}

func (s *stepBootstrapCacheLookup) Cleanup(multistep.StateBag) {}

// stepBootstrapCacheSave stores a fresh bootstrap in the cache, before any
// provisioner changes it, and prunes the cache. A failure is reported and
// the build goes on.
type stepBootstrapCacheSave struct{}

func (s *stepBootstrapCacheSave) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	c := state.Get(stateConfig).(*Config)
	key, ok := state.GetOk(stateCacheKey)
	if !ok {
		return multistep.ActionContinue
	}
	if cacheHit(state) {
		return multistep.ActionContinue
	}
	ui := state.Get(stateUI).(packersdk.Ui)
	rootfs := state.Get(stateRootfs).(string)
	// Had the mirror changed between the key's fetch and mmdebstrap's, the
	// tree would not match its key.
	if got := treeRelease(rootfs, c.Suite); got != "" && got != state.Get(stateCacheRelease).(string) {
		ui.Say("Bootstrap cache not written: the mirror changed during the bootstrap")
		return multistep.ActionContinue
	}
	path, err := saveEntry(ctx, c.BootstrapCacheDir, key.(string), rootfs)
	if err != nil {
		ui.Error(fmt.Sprintf("Bootstrap cache not written: %v", err))
		return multistep.ActionContinue
	}
	ui.Say("Bootstrap cache written: " + path)
	if err := pruneCache(c.BootstrapCacheDir, bootstrapCacheKeep); err != nil {
		ui.Error(fmt.Sprintf("Pruning the bootstrap cache: %v", err))
	}
	return multistep.ActionContinue
}

func (s *stepBootstrapCacheSave) Cleanup(multistep.StateBag) {}

// cacheHit says whether the rootfs came from the bootstrap cache.
func cacheHit(state multistep.StateBag) bool {
	hit, _ := state.Get(stateCacheHit).(bool)
	return hit
}
