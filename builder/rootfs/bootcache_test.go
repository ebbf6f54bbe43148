package rootfs

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
)

func keyConfig() *Config {
	return &Config{
		Suite: "bookworm", Distribution: "debian", Variant: "minbase",
		Components: []string{"main"}, Mirror: "http://mirror.example.test/debian",
		ExtraPackages: []string{"systemd", "nftables"},
	}
}

func TestBootstrapKeyChangesWithEachInput(t *testing.T) {
	base := bootstrapKey(keyConfig(), "mmdebstrap 1.3.5", "rel", "")
	changes := map[string]func(c *Config, version, release, keyring *string){
		"suite":        func(c *Config, _, _, _ *string) { c.Suite = "trixie" },
		"distribution": func(c *Config, _, _, _ *string) { c.Distribution = "ubuntu" },
		"variant":      func(c *Config, _, _, _ *string) { c.Variant = "apt" },
		"components":   func(c *Config, _, _, _ *string) { c.Components = []string{"main", "contrib"} },
		"packages":     func(c *Config, _, _, _ *string) { c.ExtraPackages = append(c.ExtraPackages, "curl") },
		"package pin":  func(c *Config, _, _, _ *string) { c.ExtraPackages[0] = "systemd=252.38-1~deb12u1" },
		"keyring path": func(c *Config, _, _, _ *string) { c.Keyring = "/k.gpg" },
		"keyring body": func(_ *Config, _, _, k *string) { *k = "abc" },
		"mirror":       func(c *Config, _, _, _ *string) { c.Mirror = "http://other.example.test/debian" },
		"snapshot":     func(c *Config, _, _, _ *string) { c.Snapshot = "20250101T000000Z" },
		"mmdebstrap":   func(_ *Config, v, _, _ *string) { *v = "mmdebstrap 1.5.0" },
		"release":      func(_ *Config, _, r, _ *string) { *r = "rel2" },
	}
	seen := map[string]string{base: "base"}
	for name, change := range changes {
		c := keyConfig()
		version, release, keyring := "mmdebstrap 1.3.5", "rel", ""
		change(c, &version, &release, &keyring)
		k := bootstrapKey(c, version, release, keyring)
		if other, dup := seen[k]; dup {
			t.Errorf("changing %s gives the key of %s", name, other)
		}
		seen[k] = name
	}

	// What does not change the tree does not change the key.
	c := keyConfig()
	c.ExtraPackages = []string{"nftables", "systemd"}
	c.AptCacheDir = "/var/cache/elsewhere"
	c.WorkDir, c.OutputDir = "/w", "/o"
	if k := bootstrapKey(c, "mmdebstrap 1.3.5", "rel", ""); k != base {
		t.Error("package order, apt cache or work directory changed the key")
	}
	if len(base) != 64 || !entryRE.MatchString(base+"-"+base+".tar.zst") {
		t.Errorf("key %q does not make an entry name", base)
	}
}

func TestKeyringSum(t *testing.T) {
	dir := t.TempDir()
	must(t, os.WriteFile(filepath.Join(dir, "a.gpg"), []byte("key a"), 0o644))
	one, err := keyringSum(filepath.Join(dir, "a.gpg"))
	must(t, err)
	all, err := keyringSum(dir)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "b.gpg"), []byte("key b"), 0o644))
	more, err := keyringSum(dir)
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "a.gpg"), []byte("key a, rotated"), 0o644))
	rotated, err := keyringSum(filepath.Join(dir, "a.gpg"))
	must(t, err)
	if one == "" || all == more || one == rotated {
		t.Errorf("keyring sums do not follow the keys: %q %q %q", one, all, more)
	}
	if s, err := keyringSum(""); s != "" || err != nil {
		t.Errorf("no keyring: %q, %v", s, err)
	}
	if _, err := keyringSum(filepath.Join(dir, "missing")); err == nil {
		t.Error("a missing keyring was hashed")
	}
}

// fakeMirror serves dists/bookworm/InRelease with a body the test changes.
type fakeMirror struct {
	srv     *httptest.Server
	release atomic.Value // string; "" answers 404
}

func newFakeMirror(t *testing.T) *fakeMirror {
	m := &fakeMirror{}
	m.release.Store("Origin: Debian\nDate: Sat, 01 Nov 2026 00:00:00 UTC\n")
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body := m.release.Load().(string)
		if r.URL.Path != "/debian/dists/bookworm/InRelease" || body == "" {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(m.srv.Close)
	return m
}

func (m *fakeMirror) url() string { return m.srv.URL + "/debian" }

func TestMirrorRelease(t *testing.T) {
	m := newFakeMirror(t)
	ctx := context.Background()
	a, err := mirrorRelease(ctx, m.url(), "bookworm")
	must(t, err)
	if b, _ := mirrorRelease(ctx, m.url()+"/", "bookworm"); b != a {
		t.Errorf("a trailing slash changed the sum: %q %q", a, b)
	}
	m.release.Store("Origin: Debian\nDate: Sun, 02 Nov 2026 00:00:00 UTC\n")
	if b, _ := mirrorRelease(ctx, m.url(), "bookworm"); b == a || b == "" {
		t.Errorf("a mirror update did not change the sum: %q %q", a, b)
	}
	if _, err := mirrorRelease(ctx, m.url(), "trixie"); err == nil {
		t.Error("no InRelease and no Release, and no error")
	}

	// A file: mirror without InRelease falls back to Release.
	dir := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(dir, "dists/bookworm"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "dists/bookworm/Release"), []byte("Origin: local\n"), 0o644))
	if s, err := mirrorRelease(ctx, "file://"+dir, "bookworm"); err != nil || len(s) != 64 {
		t.Errorf("file mirror: %q, %v", s, err)
	}
}

// fakeBootstrap stands in for mmdebstrap: it makes a small tree, unless
// the cache already did, as stepMmdebstrap does.
type fakeBootstrap struct {
	runs    int
	release string // written as apt's kept InRelease when not empty
}

func (f *fakeBootstrap) Run(_ context.Context, state multistep.StateBag) multistep.StepAction {
	if cacheHit(state) {
		return multistep.ActionContinue
	}
	f.runs++
	root := state.Get(stateRootfs).(string)
	for name, body := range map[string]string{"etc/os-release": "ID=debian\n", "usr/bin/tool": "#!/bin/sh\n"} {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return halt(state, err)
		}
		if err := os.WriteFile(p, []byte(body), 0o640); err != nil {
			return halt(state, err)
		}
	}
	if err := os.Symlink("/usr/bin/tool", filepath.Join(root, "etc/link")); err != nil {
		return halt(state, err)
	}
	if f.release != "" {
		lists := filepath.Join(root, "var/lib/apt/lists")
		if err := os.MkdirAll(lists, 0o755); err != nil {
			return halt(state, err)
		}
		if err := os.WriteFile(filepath.Join(lists, "mirror_debian_dists_bookworm_InRelease"), []byte(f.release), 0o644); err != nil {
			return halt(state, err)
		}
	}
	return multistep.ActionContinue
}

func (f *fakeBootstrap) Cleanup(multistep.StateBag) {}

// cacheBuild runs the directory, cache and (fake) bootstrap steps of one
// build and returns the rootfs and what the build said.
func cacheBuild(t *testing.T, c *Config, boot *fakeBootstrap) (string, string) {
	t.Helper()
	var out bytes.Buffer
	ui := &packersdk.BasicUi{Reader: new(bytes.Buffer), Writer: &out, ErrorWriter: &out, PB: &packersdk.NoopProgressTracker{}}
	state := new(multistep.BasicStateBag)
	state.Put(stateConfig, c)
	state.Put(stateUI, packersdk.Ui(ui))
	runner := &multistep.BasicRunner{Steps: []multistep.Step{
		&stepPrepareDirs{}, &stepBootstrapCacheLookup{}, boot, &stepBootstrapCacheSave{},
	}}
	runner.Run(context.Background(), state)
	if err, ok := state.GetOk("error"); ok {
		t.Fatalf("build: %v\n%s", err, out.String())
	}
	return state.Get(stateRootfs).(string), out.String()
}

func cacheFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, _, err := cacheEntries(dir)
	must(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, filepath.Base(e.path))
	}
	return names
}

func needTarZstd(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"tar", "zstd"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("needs %s", tool)
		}
	}
}

func TestBootstrapCacheMissHitCorrupt(t *testing.T) {
	needTarZstd(t)
	old := mmdebstrapVersion
	mmdebstrapVersion = func(context.Context) (string, error) { return "mmdebstrap 1.3.5", nil }
	t.Cleanup(func() { mmdebstrapVersion = old })
	m := newFakeMirror(t)
	work := t.TempDir()
	cache := filepath.Join(t.TempDir(), "bootstrap")
	c := keyConfig()
	c.Mirror = m.url()
	c.OutputDir, c.WorkDir, c.BootstrapCacheDir, c.PackerForce = work, work, cache, true
	boot := &fakeBootstrap{}

	// Cold: a miss, one bootstrap, one entry.
	rootfs, out := cacheBuild(t, c, boot)
	if boot.runs != 1 || !strings.Contains(out, "bootstrap cache miss") {
		t.Fatalf("cold build: %d bootstraps\n%s", boot.runs, out)
	}
	files := cacheFiles(t, cache)
	if len(files) != 1 {
		t.Fatalf("cache after a cold build: %v", files)
	}

	// Warm: a hit, no bootstrap, the same tree.
	rootfs, out = cacheBuild(t, c, boot)
	if boot.runs != 1 || !strings.Contains(out, "bootstrap cache hit "+files[0][:64]) {
		t.Fatalf("warm build: %d bootstraps\n%s", boot.runs, out)
	}
	if data, err := os.ReadFile(filepath.Join(rootfs, "etc/os-release")); err != nil || string(data) != "ID=debian\n" {
		t.Errorf("extracted etc/os-release: %q, %v", data, err)
	}
	if fi, err := os.Stat(filepath.Join(rootfs, "usr/bin/tool")); err != nil || fi.Mode().Perm() != 0o640 {
		t.Errorf("extracted usr/bin/tool lost its mode: %v, %v", fi, err)
	}
	if target, err := os.Readlink(filepath.Join(rootfs, "etc/link")); err != nil || target != "/usr/bin/tool" {
		t.Errorf("extracted etc/link: %q, %v", target, err)
	}
	if got := cacheFiles(t, cache); !slices.Equal(got, files) {
		t.Errorf("a hit changed the cache: %v", got)
	}

	// The mirror moves on: a miss, and a second entry.
	m.release.Store("Origin: Debian\nDate: Mon, 03 Nov 2026 00:00:00 UTC\n")
	_, out = cacheBuild(t, c, boot)
	if boot.runs != 2 || !strings.Contains(out, "bootstrap cache miss") {
		t.Fatalf("after a mirror update: %d bootstraps\n%s", boot.runs, out)
	}
	files = cacheFiles(t, cache)
	if len(files) != 2 {
		t.Fatalf("cache after the mirror update: %v", files)
	}

	// A corrupt entry is removed and the build bootstraps afresh.
	newest := filepath.Join(cache, files[0])
	data, err := os.ReadFile(newest)
	must(t, err)
	data[len(data)/2] ^= 0xff
	must(t, os.WriteFile(newest, data, 0o644))
	_, out = cacheBuild(t, c, boot)
	if boot.runs != 3 || !strings.Contains(out, "does not match its name") {
		t.Fatalf("corrupt entry: %d bootstraps\n%s", boot.runs, out)
	}
	if got := cacheFiles(t, cache); len(got) != 2 || got[0][:64] != files[0][:64] {
		t.Errorf("the corrupt entry was not replaced by a fresh one: %v", got)
	}
	if got, _ := os.ReadFile(newest); bytes.Equal(got, data) {
		t.Error("the corrupt entry is still there")
	}

	// A mirror that cannot be read: no cache at all, never a blind reuse.
	m.release.Store("")
	_, out = cacheBuild(t, c, boot)
	if boot.runs != 4 || !strings.Contains(out, "Bootstrap cache not used: cannot read the mirror's Release file") {
		t.Fatalf("unreadable mirror: %d bootstraps\n%s", boot.runs, out)
	}
	if got := cacheFiles(t, cache); len(got) != 2 {
		t.Errorf("an uncached build wrote the cache: %v", got)
	}

	// The mirror changed between the key's fetch and the bootstrap: the tree
	// is not stored under a key it does not match.
	m.release.Store("Origin: Debian\nDate: Tue, 04 Nov 2026 00:00:00 UTC\n")
	boot.release = "Origin: Debian\nDate: Wed, 05 Nov 2026 00:00:00 UTC\n"
	_, out = cacheBuild(t, c, boot)
	if boot.runs != 5 || !strings.Contains(out, "the mirror changed during the bootstrap") {
		t.Fatalf("mirror changed mid-build: %d bootstraps\n%s", boot.runs, out)
	}
	if got := cacheFiles(t, cache); len(got) != 2 {
		t.Errorf("a tree of another mirror state was stored: %v", got)
	}
}

func TestPruneCacheKeepsNewest(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	var want []string
	for i := range 6 {
		name := strings.Repeat(string(rune('a'+i)), 64) + "-" + strings.Repeat("0", 64) + ".tar.zst"
		p := filepath.Join(dir, name)
		must(t, os.WriteFile(p, []byte("x"), 0o644))
		at := now.Add(-time.Duration(i) * time.Hour)
		must(t, os.Chtimes(p, at, at))
		if i < bootstrapCacheKeep {
			want = append(want, name)
		}
	}
	stale := filepath.Join(dir, ".tmp-dead")
	fresh := filepath.Join(dir, ".tmp-running")
	other := filepath.Join(dir, "notes.txt")
	for _, p := range []string{stale, fresh, other} {
		must(t, os.WriteFile(p, nil, 0o644))
	}
	old := now.Add(-2 * staleTempAge)
	must(t, os.Chtimes(stale, old, old))

	must(t, pruneCache(dir, bootstrapCacheKeep))
	if got := cacheFiles(t, dir); !slices.Equal(got, want) {
		t.Errorf("kept %v, want %v", got, want)
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("a dead build's temporary file was kept")
	}
	for _, p := range []string{fresh, other} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s removed: %v", p, err)
		}
	}
}

// TestMmdebstrapSkippedOnHit runs the real step with a mirror nothing
// answers: were mmdebstrap started, the step would fail.
func TestMmdebstrapSkippedOnHit(t *testing.T) {
	c := keyConfig()
	c.Mirror = "http://127.0.0.1:1/debian"
	state := testState(filepath.Join(t.TempDir(), "rootfs"))
	state.Put(stateConfig, c)
	state.Put(stateCacheHit, true)
	if (&stepMmdebstrap{}).Run(context.Background(), state) != multistep.ActionContinue {
		t.Fatalf("mmdebstrap ran on a cache hit: %v", state.Get("error"))
	}
}

func TestBootstrapCacheDirPlacement(t *testing.T) {
	host := fakeHost(t, map[string]string{"etc/apt/sources.list.d/debian.sources": debianSources})
	out, apt := t.TempDir(), t.TempDir()
	for _, tc := range []struct {
		dir, want string
	}{
		{filepath.Join(out, "cache"), "is inside output_dir"},
		{filepath.Join(apt, "boot"), "is inside apt_cache_dir"},
		{apt + "-bootstrap", ""},
	} {
		_, _, err := prepare(t, host, map[string]interface{}{
			"suite": "bookworm", "output_dir": out, "apt_cache_dir": apt, "bootstrap_cache_dir": tc.dir,
		})
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.dir, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: error %v, want %q", tc.dir, err, tc.want)
		}
	}
	if !within("/a/b", "/a") || !within("/a", "/a") || within("/ab", "/a") || within("/a/../b", "/a/x") {
		t.Error("within")
	}
}
