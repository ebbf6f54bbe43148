package ubunturepo

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// dpkgOps are dpkg --compare-versions' names for the relation operators
// ("<" and ">" are the deprecated spellings of "<=" and ">=").
var dpkgOps = map[string]string{"<<": "lt", "<=": "le", "<": "le", "=": "eq", ">=": "ge", ">": "ge", ">>": "gt"}

// comparer asks dpkg, remembering each answer.
type comparer struct {
	t    *testing.T
	seen map[[3]string]bool
}

func (c *comparer) holds(a, op, b string) bool {
	c.t.Helper()
	k := [3]string{a, op, b}
	if r, ok := c.seen[k]; ok {
		return r
	}
	err := exec.Command("dpkg", "--compare-versions", a, dpkgOps[op], b).Run()
	if _, exit := err.(*exec.ExitError); err != nil && !exit {
		c.t.Fatalf("dpkg --compare-versions: %v", err)
	}
	c.seen[k] = err == nil
	return err == nil
}

// TestReversionSortsAboveDebianInOrder holds the rule to dpkg's ordering:
// each Ubuntu version sorts above the Debian one it was made from, the
// -updates build above the release's, and Debian's order among versions
// of one package (security updates, backported ~ revisions, epochs)
// survives.
func TestReversionSortsAboveDebianInOrder(t *testing.T) {
	testutil.Tool(t, "dpkg", "dpkg")
	c := &comparer{t: t, seen: map[[3]string]bool{}}
	ordered := [][]string{
		{"1:9.2p1-2+deb12u5", "1:9.2p1-2+deb12u10", "1:9.2p1-3", "1:9.6p1-3"},
		{"252.38-1~deb12u1", "252.39-1~deb12u2", "252.39-1", "252.39-1+b1"},
		{"3.0.15-1~deb12u1", "3.0.22-1~deb12u2", "3.0.22-1"},
		{"20230311", "20230311+deb12u1", "20240203"},
		{"1.6.20~ds1-1+deb12u3", "1.6.20~ds1-1+deb12u4", "1.6.20-1", "1.7.27-0ubuntu1"},
		{"6.1.176-1", "6.1.177-1"},
		{"2:1.0-1", "3:0.1-1"},
	}
	for _, suite := range []string{"jammy", "noble"} {
		for _, chain := range ordered {
			for i, v := range chain {
				if !c.holds(v, "<<", Reversion(v, suite, 1)) || !c.holds(Reversion(v, suite, 1), "<<", Reversion(v, suite, 2)) {
					t.Errorf("%s: %s < %s < %s does not hold", suite, v, Reversion(v, suite, 1), Reversion(v, suite, 2))
				}
				if i > 0 && !c.holds(Reversion(chain[i-1], suite, 1), "<<", Reversion(v, suite, 1)) {
					t.Errorf("%s: %s < %s but not once re-versioned", suite, chain[i-1], v)
				}
				if i > 0 && !c.holds(Reversion(chain[i-1], suite, 2), "<<", Reversion(v, suite, 1)) {
					t.Errorf("%s: %s's update sorts above %s", suite, chain[i-1], v)
				}
			}
		}
	}
}

func TestRewriteRelations(t *testing.T) {
	versions := map[string][2]string{
		"openssh-client": {"1:9.2p1-2+deb12u10", "1:9.2p1-2+deb12u10ubuntu0.22.04.1"},
		"libc6":          {"2.36-9+deb12u13", "2.36-9+deb12u13ubuntu0.22.04.1"},
	}
	for _, c := range []struct{ in, want string }{
		{"openssh-client (= 1:9.2p1-2+deb12u10), libc6 (>= 2.36)", "openssh-client (= 1:9.2p1-2+deb12u10ubuntu0.22.04.1), libc6 (>= 2.36)"},
		{"debian-archive-keyring, gpgv | gpgv2", "ubuntu-keyring, gpgv | gpgv2"},
		{"libc6:any (>=2.36-9+deb12u13)", "libc6:any (>= 2.36-9+deb12u13ubuntu0.22.04.1)"},
		{"openssh-client (<< 1:9.2p1-2+deb12u10~)", "openssh-client (<< 1:9.2p1-2+deb12u10~)"},
	} {
		if got := rewriteRelations(c.in, renames, versions); got != c.want {
			t.Errorf("rewriteRelations(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestKernelMetaVersion(t *testing.T) {
	for in, want := range map[string]string{"6.1.0-50-amd64": "6.1.0.50.50", "5.15.0-153-generic": "5.15.0.153.153"} {
		if got, err := kernelMetaVersion(in); err != nil || got != want {
			t.Errorf("kernelMetaVersion(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"6.1.0", "6.1.0-rc1-amd64", "-50-amd64"} {
		if _, err := kernelMetaVersion(bad); err == nil {
			t.Errorf("kernelMetaVersion(%q) accepted it", bad)
		}
	}
}

// TestE2EReversioningKeepsEveryRelation reads the built archive beside
// Debian's index it was made from: every versioned relation of every
// published package that names a published package holds in the archive
// exactly where it holds in Debian, as dpkg judges both.
func TestE2EReversioningKeepsEveryRelation(t *testing.T) {
	a, _ := e2eArchive(t, false)
	f, err := newFetcher(cacheDir(), "")
	if err != nil {
		t.Fatal(err)
	}
	dump, err := f.apt("apt-cache", "dumpavail")
	if err != nil {
		t.Fatal(err)
	}
	debian := map[string]stanza{}
	debVersions := map[string]string{}
	for _, s := range parseStanzas(dump) {
		debian[s.get("Package")] = s
		debVersions[s.get("Package")] = s.get("Version")
	}
	c := &comparer{t: t, seen: map[[3]string]bool{}}
	checked := 0
	for _, suite := range []string{"jammy", "noble"} {
		for _, pocket := range []string{suite, suite + "-updates"} {
			published := map[string]string{}
			for n, v := range a.Versions[suite] {
				published[n] = v
			}
			for n, v := range a.Versions[pocket] {
				published[n] = v
			}
			for _, s := range readPackages(t, a.Root, pocket) {
				d, ok := debian[s.get("Package")]
				if !ok {
					continue // Ubuntu's own: ubuntu-keyring, the kernel's meta packages
				}
				checked += compareRelations(t, c, s, d, published, debVersions)
			}
		}
	}
	if checked < 500 {
		t.Errorf("only %d versioned relations compared", checked)
	}
	t.Logf("%d versioned relations hold in the archive where they hold in Debian (%d comparisons by dpkg)", checked, len(c.seen))
}

func compareRelations(t *testing.T, c *comparer, s, d stanza, published, debVersions map[string]string) int {
	t.Helper()
	n := 0
	for _, field := range relationFields {
		got := relation.FindAllStringSubmatch(s.get(field), -1)
		was := relation.FindAllStringSubmatch(d.get(field), -1)
		if len(got) != len(was) {
			t.Errorf("%s: %s has %d relations, Debian's %d", s.get("Package"), field, len(got), len(was))
			continue
		}
		for i, g := range got {
			w := was[i]
			if g[4] == "" || published[g[1]] == "" || debVersions[w[1]] == "" {
				continue
			}
			n++
			if now, then := c.holds(published[g[1]], g[4], g[5]), c.holds(debVersions[w[1]], w[4], w[5]); now != then {
				t.Errorf("%s %s: %q holds %v against %s %s; Debian's %q held %v against %s",
					s.get("Package"), field, g[0], now, g[1], published[g[1]], w[0], then, debVersions[w[1]])
			}
		}
	}
	return n
}

func readPackages(t *testing.T, root, pocket string) []stanza {
	t.Helper()
	var out []stanza
	for _, comp := range components {
		data, err := os.ReadFile(filepath.Join(root, "dists", pocket, comp, "binary-amd64", "Packages"))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, parseStanzas(data)...)
	}
	return out
}

// FuzzReadAr feeds readAr arbitrary bytes: it must return members inside
// the file, or an error, and never panic.
func FuzzReadAr(f *testing.F) {
	f.Add([]byte(arMagic))
	f.Add(append(append([]byte(arMagic), arHeader("debian-binary", 4)...), "2.0\n"...))
	f.Add(append([]byte(arMagic), bytes.Repeat([]byte(" "), 60)...))
	f.Fuzz(func(t *testing.T, data []byte) {
		members, err := readAr(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		for _, m := range members {
			if m.offset < 0 || m.size < 0 || m.offset+m.size > int64(len(data)) {
				t.Fatalf("member %q at %d+%d lies outside %d bytes", m.name, m.offset, m.size, len(data))
			}
		}
	})
}

// FuzzParseStanzas feeds control files to the parser and the relation
// rewriter: whatever a stanza holds, its fields survive a rewrite and a
// second parse.
func FuzzParseStanzas(f *testing.F) {
	f.Add([]byte("Package: sudo\nVersion: 1.9.13p3-1+deb12u4\nDepends: libc6 (>= 2.34), libpam0g (>= 0.99.7.1)\nDescription: x\n long\n .\n"))
	f.Add([]byte("Package: a\n\nPackage: b\nProvides: c (= 1)\n"))
	f.Add([]byte(":\n \n#\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, s := range parseStanzas(data) {
			r := rewriteControl(s.without(), "1.0ubuntu0.22.04.1", renames, map[string][2]string{"libc6": {"2.34", "2.34ubuntu0.22.04.1"}})
			again := parseStanzas([]byte(r.String()))
			if len(again) > 1 {
				t.Fatalf("a rewritten stanza reads back as %d stanzas:\n%s", len(again), r)
			}
		}
	})
}
