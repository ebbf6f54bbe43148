package target

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/target/collector"
)

func TestAllIsOrdered(t *testing.T) {
	all := All()
	at := map[string]int{}
	for i, c := range all {
		at[c.Name()] = i
	}
	want := []string{"access", "audit", "cgroup", "container_runtime", "containers", "encryption", "files", "firewall",
		"gpu", "gpu_driver", "infiniband", "kernel", "kernel_modules", "kubelet", "limits", "manifest", "network", "os", "packages", "pci", "sbom",
		"secureboot", "ssh", "sysctl", "systemd", "tls", "tls_probe"}
	if got := slices.Sorted(maps.Keys(at)); !slices.Equal(got, want) {
		t.Errorf("All() has %v, want %v", got, want)
	}
	for i, c := range all {
		for _, n := range c.Needs() {
			if j, ok := at[n]; !ok || j > i {
				t.Errorf("%s (at %d) needs %s (at %d)", c.Name(), i, n, j)
			}
		}
	}
}

type needy struct{ name, need string }

func (c needy) Name() string                                            { return c.name }
func (c needy) Needs() []string                                         { return []string{c.need} }
func (needy) Collect(context.Context, *collect.Env, *facts.Facts) error { return nil }

// A set of collectors that cannot be ordered runs none of them: each would
// risk reading facts not there yet, so each is an error, and says why.
func TestCollectRefusesCollectorsItCannotOrder(t *testing.T) {
	for _, cs := range [][]collector.Collector{
		{needy{"ssh", "network"}, absent{}},
		{needy{"a", "b"}, needy{"b", "a"}},
	} {
		f, err := Rootfs(context.Background(), t.TempDir(), Options{Collectors: cs})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cs {
			st := f.Collectors[c.Name()]
			if st.Status != facts.StatusError || !strings.Contains(st.Reason, "ordering collectors") {
				t.Errorf("%s: %+v, want an error about the order", c.Name(), st)
			}
		}
	}
}

// watched records what its collector changed in the document: each JSON
// leaf it set, changed or removed, by path.
type watched struct {
	collector.Collector
	changed map[string]map[string]string
	t       *testing.T
}

func (w watched) Collect(ctx context.Context, env *collect.Env, f *facts.Facts) error {
	before := leaves(w.t, f)
	err := w.Collector.Collect(ctx, env, f)
	after := leaves(w.t, f)
	d := map[string]string{}
	for p, v := range after {
		if before[p] != v {
			d[p] = v
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			d[p] = "(removed)"
		}
	}
	w.changed[w.Name()] = d
	return err
}

// leaves flattens the document's JSON to its leaves: every value that is
// not a non-empty object, by its dotted path.
func leaves(t *testing.T, f *facts.Facts) map[string]string {
	t.Helper()
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	var walk func(string, any)
	walk = func(p string, v any) {
		if m, ok := v.(map[string]any); ok && len(m) > 0 {
			for k, x := range m {
				walk(p+"."+k, x)
			}
			return
		}
		b, _ := json.Marshal(v)
		out[p] = string(b)
	}
	walk("", doc)
	return out
}

// closure returns the named collector of all and, transitively, every
// collector it needs.
func closure(all []collector.Collector, name string) []collector.Collector {
	byName := map[string]collector.Collector{}
	for _, c := range all {
		byName[c.Name()] = c
	}
	var out []collector.Collector
	seen := map[string]bool{}
	var add func(string)
	add = func(n string) {
		if seen[n] {
			return
		}
		seen[n] = true
		for _, m := range byName[n].Needs() {
			add(m)
		}
		out = append(out, byName[n])
	}
	add(name)
	return out
}

// changes runs cs over dir and returns what each changed in the document
// and the status it ended with.
func changes(t *testing.T, dir string, cs []collector.Collector) (map[string]map[string]string, map[string]facts.CollectorStatus) {
	t.Helper()
	changed := map[string]map[string]string{}
	var ws []collector.Collector
	for _, c := range cs {
		ws = append(ws, watched{Collector: c, changed: changed, t: t})
	}
	f, err := Rootfs(context.Background(), dir, Options{Collectors: ws, Now: time.Unix(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	return changed, f.Collectors
}

// needsTree is a rootfs in which what collectors read of each other's
// facts shows: nginx and sshd installed without their configuration, and
// the NVIDIA driver with persistenced enabled and nouveau blacklisted on
// the kernel command line.
func needsTree(t *testing.T) string {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"etc/os-release": "ID=debian\nVERSION_ID=12\n",
		"var/lib/dpkg/status": `Package: systemd
Status: install ok installed
Architecture: amd64
Version: 252.30-1~deb12u2

Package: nginx
Status: install ok installed
Architecture: amd64
Version: 1.22.1-9

Package: openssh-server
Status: install ok installed
Architecture: amd64
Version: 1:9.2p1-2+deb12u3

Package: nvidia-driver
Status: hold ok installed
Architecture: amd64
Version: 535.216.01-1~deb12u1

Package: libnvidia-ml1
Status: install ok installed
Architecture: amd64
Version: 535.216.01-1~deb12u1
`,
		"etc/default/grub": `GRUB_CMDLINE_LINUX="quiet modprobe.blacklist=nouveau"` + "\n",
		"etc/systemd/system/multi-user.target.wants/nvidia-persistenced.service": "",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func needTrees(t *testing.T) map[string]string {
	return map[string]string{
		"hardened": "../cmd/gpuhost/testdata/rootfs-hardened",
		"weak":     "../cmd/gpuhost/testdata/rootfs-weak",
		"tls":      "../facts/tls/testdata/hardened",
		"ssh":      "../facts/ssh/testdata/hardened",
		"runtime":  "../facts/runtime/testdata/hardened",
		"needs":    needsTree(t),
	}
}

// Each collector, run with only what it needs (and what those need) before
// it, changes the document exactly as it does in a whole scan, and ends
// with the same status: it reads nothing of the facts that its Needs do
// not put there first.
func TestNeedsCoverWhatEachCollectorReads(t *testing.T) {
	all := All()
	for tree, dir := range needTrees(t) {
		full, fullStatus := changes(t, dir, all)
		for _, c := range all {
			got, status := changes(t, dir, closure(all, c.Name()))
			if !maps.Equal(got[c.Name()], full[c.Name()]) {
				t.Errorf("%s tree: %s with only its needs changed\n%v\nin a whole scan\n%v", tree, c.Name(), got[c.Name()], full[c.Name()])
			}
			if status[c.Name()] != fullStatus[c.Name()] {
				t.Errorf("%s tree: %s with only its needs is %+v, in a whole scan %+v", tree, c.Name(), status[c.Name()], fullStatus[c.Name()])
			}
		}
	}
}

// without hides some of a collector's needs, as a collector would that
// reads more than it declares.
type without struct {
	collector.Collector
	hidden []string
}

func (w without) Needs() []string {
	return slices.DeleteFunc(slices.Clone(w.Collector.Needs()), func(n string) bool { return slices.Contains(w.hidden, n) })
}

// The comparison above can fail: on the needs tree, a collector that reads
// another's facts changes the document otherwise, or ends otherwise, when
// that one has not run. (What ssh and tls_probe read of the listeners, and
// firewall adds to them, shows only on a live host.)
func TestHiddenNeedsShowOnTheNeedsTree(t *testing.T) {
	dir := needsTree(t)
	all := All()
	full, fullStatus := changes(t, dir, all)
	for _, h := range []struct{ name, hide string }{
		{"cgroup", "packages"}, {"gpu_driver", "kernel"}, {"gpu_driver", "systemd"}, {"tls", "packages"},
		{"ssh", "packages"}, {"systemd", "packages"},
	} {
		name, hide := h.name, h.hide
		var cs []collector.Collector
		for _, c := range closure(all, name) {
			switch c.Name() {
			case name:
				cs = append(cs, without{c, []string{hide}})
			case hide:
			default:
				cs = append(cs, c)
			}
		}
		got, status := changes(t, dir, cs)
		if maps.Equal(got[name], full[name]) && status[name] == fullStatus[name] {
			t.Errorf("%s without %s: same changes and status as a whole scan; the needs tree does not show that it reads %s", name, hide, hide)
		}
	}
}
