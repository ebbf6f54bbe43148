package images

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/manifest/lock"
	"github.com/gpuhost/gpuhost/manifest/treedigest"
)

// lockBake bakes from lockFile and returns the build's output and error.
type lockBake func(name, lockFile string) (string, error)

// lockedBake locks the image baked at tree (`gpuhost lock --from`'s
// library), bakes it again from that lock with the caller's fixed
// SOURCE_DATE_EPOCH, and wants the builder's bootstrap check and the plan's
// verify lock step to pass, the inventory to be the lock's, the tree digest
// the builder records beside the tree to be the tree's, and the tree and
// manifest to be the first bake's. The first bake bootstrapped without a
// lock (its cache key has none), so the same digest also says that
// mmdebstrap and the plan made the same tree twice. It returns the lock.
func lockedBake(t *testing.T, tree string, bake ubuntuBakeFunc, template string, names ...string) *lock.Lock {
	t.Helper()
	l, lockFile := lockOf(t, tree)
	for _, name := range names {
		if _, ok := find(l, name); !ok {
			t.Errorf("the lock has no %s", name)
		}
	}
	if !slices.ContainsFunc(l.Keyrings, func(f lock.File) bool { return f.Path == "/usr/share/keyrings/cuda-archive-keyring.gpg" }) ||
		!slices.ContainsFunc(l.Sources, func(f lock.File) bool { return strings.HasPrefix(f.Path, "/etc/apt/sources.list.d/cuda-") }) {
		t.Errorf("the lock lacks the CUDA repository's source or keyring:\n%+v", l)
	}
	locked, log, err := bake(t, "locked", template, map[string]string{"lock_file": lockFile})
	if err != nil {
		t.Fatalf("bake from the lock: %v\n%s", err, log)
	}
	for _, want := range []string{"Bootstrap matches the lock", "==> gpuhost-gpu step: verify lock", "gpuhost-gpu: every package, .deb digest, apt source and keyring as the lock has them"} {
		if !strings.Contains(log, want) {
			t.Errorf("the locked bake: no %q in:\n%s", want, log)
		}
	}
	recorded, err := os.ReadFile(filepath.Join(filepath.Dir(locked), "tree-digest.txt"))
	if err != nil {
		t.Fatalf("the locked bake recorded no tree digest: %v", err)
	}
	if d, err := treedigest.Digest(locked, treedigest.Options{Exclude: treedigest.BuildExcludes}); err != nil || strings.TrimSpace(string(recorded)) != d {
		t.Errorf("the locked bake recorded tree digest %s, the tree's is %s (%v)", strings.TrimSpace(string(recorded)), d, err)
	}
	inventory := dpkgStatus(t, filepath.Join(locked, "var/lib/dpkg/status"))
	if len(inventory) != len(l.Packages) {
		t.Errorf("the locked bake holds %d packages, the lock %d", len(inventory), len(l.Packages))
	}
	for _, p := range l.Packages {
		if inventory[p.Name].version != p.Version {
			t.Errorf("%s is %q, the lock has %s", p.Name, inventory[p.Name].version, p.Version)
		}
	}
	sameTree(t, tree, locked)
	return l
}

// brokenLocks bakes from locks another build could not meet, and each bake
// must fail naming the package: a version the sources lack (of planned, a
// package the plan installs that neither the bootstrap nor the
// configuration's pins name, whose own checks would refuse the lock first)
// together with the hash of
// cudaMeta, a package from NVIDIA's repository (both named by the plan's
// check against the apt sources, before it installs anything, so one bake
// shows both), and a base package's .deb hash (the builder's check). The bootstrap cache key has the locked versions, not their
// hashes, so the last bake extracts the tree that the locked bake cached.
func brokenLocks(t *testing.T, l *lock.Lock, planned, cudaMeta string, bake lockBake) {
	t.Helper()
	dir := t.TempDir()
	write := func(name string, c *lock.Lock) string {
		t.Helper()
		data, err := c.Encode()
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tampered := strings.Repeat("0", 64)
	c := *l
	c.Packages = slices.Clone(l.Packages)
	var unmet, meta lock.Package
	for i, p := range c.Packages {
		switch p.Name {
		case planned:
			unmet = p
			c.Packages[i].Version = "0.0.1-1"
		case cudaMeta:
			meta = p
			c.Packages[i].SHA256 = tampered
		}
	}
	if unmet.Name == "" || meta.Name == "" {
		t.Fatalf("the lock has no %s or no %s to break", planned, cudaMeta)
	}
	mustFail(t, bake, "lock-unmet", write("unmet.lock", &c),
		fmt.Sprintf("gpuhost-gpu: lock: %s=0.0.1-1 (%s) is not in the apt sources, which have %s at: ", planned, unmet.Arch, planned),
		fmt.Sprintf("gpuhost-gpu: lock: %s=%s (%s): the apt sources give sha256 %s, the lock has %s", meta.Name, meta.Version, meta.Arch, meta.SHA256, tampered),
		"gpuhost-gpu failed in step: lock available")

	c.Packages = slices.Clone(l.Packages)
	var base lock.Package
	for i, p := range c.Packages {
		if p.Name == "base-files" {
			base = p
			c.Packages[i].SHA256 = tampered
		}
	}
	mustFail(t, bake, "lock-tampered-base", write("tampered-base.lock", &c),
		fmt.Sprintf("package base-files=%s (%s): the .deb's sha256 is %s, the lock has %s", base.Version, base.Arch, base.SHA256, tampered),
		"bootstrap cache hit")
}

// mustFail bakes from lockFile and wants the bake to fail with each of want
// in its output.
func mustFail(t *testing.T, bake lockBake, name, lockFile string, want ...string) {
	t.Helper()
	log, err := bake(name, lockFile)
	if err == nil {
		t.Fatalf("bake %s passed", name)
	}
	for _, w := range want {
		if !strings.Contains(log, w) {
			t.Errorf("bake %s: no %q in:\n%s", name, w, log)
		}
	}
	t.Logf("bake %s failed: %s", name, firstLineWith(log, want[0]))
}

func find(l *lock.Lock, name string) (lock.Package, bool) {
	for _, p := range l.Packages {
		if p.Name == name {
			return p, true
		}
	}
	return lock.Package{}, false
}

// treeDiff lists the entries whose lines differ between two trees, at most
// 60 of them.
func treeDiff(t *testing.T, a, b string) string {
	t.Helper()
	lines := func(root string) map[string]string {
		out := map[string]string{}
		err := treedigest.Walk(root, treedigest.Options{Exclude: treedigest.BuildExcludes}, func(line string) error {
			p, _, _ := strings.Cut(line, "\" ")
			out[p] = line
			return nil
		})
		if err != nil {
			t.Error(err)
		}
		return out
	}
	la, lb := lines(a), lines(b)
	var diff []string
	for _, p := range slices.Sorted(maps.Keys(la)) {
		if la[p] != lb[p] {
			diff = append(diff, "- "+la[p], "+ "+lb[p])
		}
	}
	for _, p := range slices.Sorted(maps.Keys(lb)) {
		if _, ok := la[p]; !ok {
			diff = append(diff, "+ "+lb[p])
		}
	}
	if len(diff) > 120 {
		diff = append(diff[:120], fmt.Sprintf("... and %d more", len(diff)-120))
	}
	return strings.Join(diff, "\n")
}
