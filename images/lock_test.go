package images

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/manifest"
	"github.com/gpuhost/gpuhost/manifest/lock"
	"github.com/gpuhost/gpuhost/manifest/treedigest"
)

// bakeFunc bakes testdata/cuda-repo-mirror.pkr.hcl with some variables
// changed and returns the rootfs, the build's output and its error.
type bakeFunc func(name string, change map[string]string) (string, string, error)

// lockedRebuilds locks the image baked at pinned (`gpuhost lock --from`'s
// library) and bakes it twice from that lock, with SOURCE_DATE_EPOCH set
// by the caller: both bakes must pass the builder's bootstrap check and the
// plan's verify lock step, hold the same inventory as the lock, and give
// the same rootfs tree digest, which the builder records beside the tree.
// Then broken locks must fail the bake naming the package: a version the
// mirror lacks (a Debian package the plan installs) together with a stand-in
// package's hash (both named by the plan's check against the apt sources,
// before it installs), and a base package's .deb hash (the builder's check).
func lockedRebuilds(t *testing.T, pinned string, bake bakeFunc) {
	data, err := os.ReadFile(filepath.Join(pinned, "etc/gpuhost/manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Decode(data)
	if err != nil {
		t.Fatalf("the pinned bake's manifest: %v", err)
	}
	l, err := lock.FromManifest(m)
	if err != nil {
		t.Fatalf("locking the pinned bake: %v", err)
	}
	dir := t.TempDir()
	writeLock := func(name string, l *lock.Lock) string {
		t.Helper()
		p := filepath.Join(dir, name)
		data, err := l.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lockFile := writeLock("cuda-repo.lock", l)
	for _, name := range []string{"base-files", "dkms", "nvidia-driver-535-open", "cuda-keyring", "nvidia-container-toolkit"} {
		if _, ok := find(l, name); !ok {
			t.Errorf("the lock has no %s", name)
		}
	}
	if !slices.ContainsFunc(l.Keyrings, func(f lock.File) bool { return f.Path == "/usr/share/keyrings/cuda-archive-keyring.gpg" }) ||
		!slices.ContainsFunc(l.Sources, func(f lock.File) bool { return strings.HasPrefix(f.Path, "/etc/apt/sources.list.d/cuda-") }) {
		t.Errorf("the lock lacks the CUDA repository's source or keyring:\n%+v", l)
	}
	t.Logf("lock: %d packages, %d sources, %d keyrings", len(l.Packages), len(l.Sources), len(l.Keyrings))

	var trees, digests []string
	for _, name := range []string{"locked-a", "locked-b"} {
		tree, log, err := bake(name, map[string]string{"lock_file": lockFile})
		if err != nil {
			t.Fatalf("bake %s from the lock: %v\n%s", name, err, log)
		}
		for _, want := range []string{"Bootstrap matches the lock", "==> gpuhost-gpu step: verify lock", "gpuhost-gpu: every package, .deb digest, apt source and keyring as the lock has them"} {
			if !strings.Contains(log, want) {
				t.Errorf("bake %s: no %q in:\n%s", name, want, log)
			}
		}
		recorded, err := os.ReadFile(filepath.Join(filepath.Dir(tree), "tree-digest.txt"))
		if err != nil {
			t.Fatalf("bake %s recorded no tree digest: %v", name, err)
		}
		d, err := treedigest.Digest(tree, treedigest.Options{Exclude: treedigest.BuildExcludes})
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(string(recorded)); got != d {
			t.Errorf("bake %s recorded tree digest %s, the tree's is %s", name, got, d)
		}
		trees, digests = append(trees, tree), append(digests, d)
	}
	a, b := dpkgStatus(t, filepath.Join(trees[0], "var/lib/dpkg/status")), dpkgStatus(t, filepath.Join(trees[1], "var/lib/dpkg/status"))
	if !maps.Equal(a, b) {
		t.Errorf("the two bakes' inventories differ")
	}
	if len(a) != len(l.Packages) {
		t.Errorf("the bakes hold %d packages, the lock %d", len(a), len(l.Packages))
	}
	for _, p := range l.Packages {
		if a[p.Name].version != p.Version {
			t.Errorf("%s is %q, the lock has %s", p.Name, a[p.Name].version, p.Version)
		}
	}
	if digests[0] != digests[1] {
		t.Errorf("two bakes of one lock: tree digests %s and %s; the entries that differ:\n%s", digests[0], digests[1], treeDiff(t, trees[0], trees[1]))
	} else {
		t.Logf("both locked bakes: tree digest %s", digests[0])
	}
	// What the digest leaves out and an image format keeps: when files
	// were written. Packages unpack with their .deb's times; what the
	// build itself writes has the time it ran.
	n, examples := mtimesDiffer(t, trees[0], trees[1])
	t.Logf("modification times differ between the two locked bakes for %d entries, such as %s", n, strings.Join(examples, ", "))
	// The unlocked bake bootstrapped on its own (its cache key has no
	// lock), so the same digest here says mmdebstrap made the same tree
	// twice too.
	if d, err := treedigest.Digest(pinned, treedigest.Options{Exclude: treedigest.BuildExcludes}); err != nil || d != digests[0] {
		t.Errorf("the unlocked bake's tree digest is %s (%v), the locked bakes' %s; the entries that differ:\n%s", d, err, digests[0], treeDiff(t, pinned, trees[0]))
	}

	// A lock another build could not meet: one bake, since the plan names
	// every locked package it cannot get before it installs any.
	tampered := strings.Repeat("0", 64)
	c := *l
	c.Packages = slices.Clone(l.Packages)
	var dkms, toolkit lock.Package
	for i, p := range c.Packages {
		switch p.Name {
		case "dkms":
			dkms = p
			c.Packages[i].Version = "0.0.1-1"
		case "cuda-toolkit-12-2":
			toolkit = p
			c.Packages[i].SHA256 = tampered
		}
	}
	mustFail(t, bake, "lock-unmet", writeLock("unmet.lock", &c),
		fmt.Sprintf("gpuhost-gpu: lock: dkms=0.0.1-1 (%s) is not in the apt sources, which have dkms at: %s", dkms.Arch, dkms.Version),
		fmt.Sprintf("gpuhost-gpu: lock: cuda-toolkit-12-2=%s (%s): the apt sources give sha256 %s, the lock has %s", toolkit.Version, toolkit.Arch, toolkit.SHA256, tampered),
		"gpuhost-gpu failed in step: lock available")

	// A base package's hash: the builder refuses the bootstrap. The
	// bootstrap cache key has the locked versions, not their hashes, so
	// this bake extracts the tree the first locked bake cached.
	c.Packages = slices.Clone(l.Packages)
	var base lock.Package
	for i, p := range c.Packages {
		if p.Name == "base-files" {
			base = p
			c.Packages[i].SHA256 = tampered
		}
	}
	mustFail(t, bake, "lock-tampered-base", writeLock("tampered-base.lock", &c),
		fmt.Sprintf("package base-files=%s (%s): the .deb's sha256 is %s, the lock has %s", base.Version, base.Arch, base.SHA256, tampered),
		"bootstrap cache hit")
}

// mustFail bakes from lockFile and wants the bake to fail with each of want
// in its output.
func mustFail(t *testing.T, bake bakeFunc, name, lockFile string, want ...string) {
	t.Helper()
	_, log, err := bake(name, map[string]string{"lock_file": lockFile})
	if err == nil {
		t.Fatalf("bake %s passed", name)
	}
	for _, w := range want {
		if !strings.Contains(log, w) {
			t.Errorf("bake %s: no %q in:\n%s", name, w, log)
		}
	}
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

// mtimesDiffer counts the entries of tree a whose modification time is not
// the one of the same path in b, and names a few.
func mtimesDiffer(t *testing.T, a, b string) (int, []string) {
	t.Helper()
	n := 0
	var examples []string
	err := filepath.WalkDir(a, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(a, p)
		fa, err := os.Lstat(p)
		if err != nil {
			return err
		}
		fb, err := os.Lstat(filepath.Join(b, rel))
		if err == nil && fa.ModTime().Equal(fb.ModTime()) {
			return nil
		}
		n++
		if len(examples) < 5 {
			examples = append(examples, "/"+rel)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
	return n, examples
}
