package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// linesOf turns text into output lines arriving one second apart.
func linesOf(text string) []line {
	var out []line
	for i, l := range strings.Split(text, "\n") {
		out = append(out, line{time.Duration(i) * time.Second, l})
	}
	return out
}

func TestParseBuildOutput(t *testing.T) {
	data, err := os.ReadFile("testdata/packer-build.log")
	if err != nil {
		t.Fatal(err)
	}
	var r buildResult
	if err := r.parse(linesOf(string(data))); err != nil {
		t.Fatal(err)
	}
	if r.suite != "bookworm" || r.variant != "minbase" || r.mirror != "http://mirror.invalid/debian" {
		t.Errorf("bootstrap line: suite %q variant %q mirror %q", r.suite, r.variant, r.mirror)
	}
	var names []string
	for _, s := range r.steps {
		names = append(names, s.name)
	}
	if got := strings.Join(names, " "); got != "dirs mmdebstrap policy-rc.d mount provision unmount pack" {
		t.Errorf("steps %q", got)
	}
	if r.steps[1].dur != 429300*time.Millisecond || r.steps[6].dur != 147700*time.Millisecond {
		t.Errorf("mmdebstrap %s, pack %s; want 429.3s and 147.7s", r.steps[1].dur, r.steps[6].dur)
	}
	phases := map[string]time.Duration{}
	for _, p := range r.phases {
		phases[p.name] += p.dur
	}
	for _, want := range []string{"mmdebstrap: downloading packages", "mmdebstrap: installing remaining packages",
		"upload nftables.conf", "provisioner shell", "gpu: apt update", "gpu: install driver", "gpu: done", "pack"} {
		if phases[want] <= 0 {
			t.Errorf("no phase %q in %v", want, r.phases)
		}
	}
	// Lines are one second apart: the driver install runs from its
	// marker to the containerd one.
	if got := phases["gpu: install driver"]; got != 11*time.Second {
		t.Errorf("gpu: install driver took %s, want 11s", got)
	}
}

func TestParseBootstrapCache(t *testing.T) {
	key := strings.Repeat("ab", 32)
	for text, want := range map[string]string{
		"==> b.s: bootstrap cache hit " + key + " (/c/" + key + "-x.tar.zst)":   "hit",
		"==> b.s: bootstrap cache miss " + key:                                  "miss",
		"==> b.s: Bootstrap cache not used: cannot read the mirror's Release":   "not used: cannot read the mirror's Release",
		"==> b.s: Bootstrapping debian bookworm (minbase) from http://m/debian": "",
	} {
		var r buildResult
		_ = r.parse(linesOf(text))
		if r.bootCache != want {
			t.Errorf("%q: bootCache %q, want %q", text, r.bootCache, want)
		}
	}
}

func TestParseBuildOutputIncomplete(t *testing.T) {
	for name, text := range map[string]string{
		"no timings": "==> b.s: Bootstrapping debian bookworm (minbase) from http://mirror.invalid/debian\n",
		"no mirror":  "==> b.s: Step timings:\n==> b.s: step seconds\n==> b.s: pack 1.0\n==> b.s: total 1.0\n",
	} {
		var r buildResult
		if err := r.parse(linesOf(text)); err == nil {
			t.Errorf("%s: parsed without error: %+v", name, r)
		}
	}
}

const status = `Package: libc6
Status: install ok installed
Architecture: amd64
Version: 2.36-9+deb12u13
Description: GNU C Library
 Package: not-a-field

Package: nvidia-smi
Status: hold ok installed
Architecture: amd64
Version: 535.261.03-1

Package: gone
Status: deinstall ok config-files
Architecture: amd64
Version: 1.0
`

func TestParseStatus(t *testing.T) {
	got := parseStatus([]byte(status))
	want := map[string]string{"libc6:amd64": "2.36-9+deb12u13", "nvidia-smi:amd64": "535.261.03-1"}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

func writeStatus(t *testing.T, text string) string {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "var/lib/dpkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "var/lib/dpkg/status"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestComparePackages(t *testing.T) {
	ours := writeStatus(t, status)
	same, err := comparePackages(ours, writeStatus(t, status))
	if err != nil {
		t.Fatal(err)
	}
	if len(same.differ) != 0 || same.ours != 2 || same.plain != 2 {
		t.Errorf("identical trees: %+v", same)
	}
	other := strings.Replace(status, "535.261.03-1", "535.247.01-1", 1) + "\nPackage: extra\nStatus: install ok installed\nArchitecture: all\nVersion: 1\n"
	diff, err := comparePackages(ours, writeStatus(t, other))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"extra:all: ours -, plain 1", "nvidia-smi:amd64: ours 535.261.03-1, plain 535.247.01-1"}
	if strings.Join(diff.differ, "|") != strings.Join(want, "|") {
		t.Errorf("differ %q, want %q", diff.differ, want)
	}
	if _, err := comparePackages(ours, t.TempDir()); err == nil {
		t.Error("a tree without a dpkg status compared without error")
	}
}

func TestManifestPins(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "etc/gpuhost")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	m := `{"pins":{"packages":[{"name":"libnvidia-ml1","version":"535.261.03-1"},{"name":"containerd"}]}}`
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(m), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := manifestPins(root)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != "libnvidia-ml1=535.261.03-1 containerd" {
		t.Errorf("pins %q", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(`{"pins":{}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := manifestPins(root); err == nil {
		t.Error("a manifest without pins gave no error")
	}
}

func TestPrintReport(t *testing.T) {
	o := options{overheadMax: targetOverhead, warmMax: targetWarm}
	steps := []timing{{"mmdebstrap", 60 * time.Second}, {"pack", 30 * time.Second}}
	plain := &plainResult{wall: 100 * time.Second, steps: []timing{{"mmdebstrap", 60 * time.Second}}}
	pkgs := &packageDiff{ours: 3, plain: 3}
	for _, tc := range []struct {
		cold, warm time.Duration
		missed     bool
		want       []string
	}{
		{110 * time.Second, 55 * time.Second, false, []string{"1.10    <= 1.15  met", "0.50    <= 0.60  met"}},
		{120 * time.Second, 90 * time.Second, true, []string{"1.20    <= 1.15  MISSED", "0.75    <= 0.60  MISSED"}},
	} {
		var b bytes.Buffer
		cold := &buildResult{wall: tc.cold, steps: steps, phases: []timing{{"gpu: hold", time.Second}}, bootCache: "miss"}
		warm := &buildResult{wall: tc.warm, steps: steps[:1], bootCache: "hit"}
		if missed := printReport(&b, o, cold, warm, plain, pkgs); missed != tc.missed {
			t.Errorf("cold %s warm %s: missed = %v", tc.cold, tc.warm, missed)
		}
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("report lacks %q:\n%s", w, b.String())
			}
		}
		if !strings.Contains(b.String(), "bootstrap cache: cold miss, warm hit") {
			t.Errorf("report does not say what the bootstrap cache did:\n%s", b.String())
		}
		if !strings.Contains(b.String(), "identical in ours and plain (3)") {
			t.Errorf("report does not say the packages are identical:\n%s", b.String())
		}
	}
}

func TestJoinTimings(t *testing.T) {
	a := []timing{{"apt update", time.Second}, {"x", 2 * time.Second}, {"apt update", 3 * time.Second}}
	b := []timing{{"apt update", 4 * time.Second}, {"y", 5 * time.Second}}
	got := joinTimings(a, b)
	want := []timingRow{{"apt update", "1.0", "4.0"}, {"x", "2.0", "-"}, {"apt update", "3.0", "-"}, {"y", "-", "5.0"}}
	if len(got) != len(want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d: %v, want %v", i, got[i], want[i])
		}
	}
}

// FuzzParseBuildOutput: whatever a build prints, parsing it returns.
func FuzzParseBuildOutput(f *testing.F) {
	data, err := os.ReadFile("testdata/packer-build.log")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(string(data))
	f.Add("==> b.s: Step timings:\n==> b.s: pack 1e400\n")
	f.Fuzz(func(t *testing.T, text string) {
		var r buildResult
		if err := r.parse(linesOf(text)); err == nil && (len(r.steps) == 0 || r.mirror == "") {
			t.Errorf("parsed without steps or mirror: %+v", r)
		}
		for _, p := range r.phases {
			if p.dur < 0 {
				t.Errorf("phase %s took %s", p.name, p.dur)
			}
		}
	})
}

// FuzzParseStatus: any dpkg status text parses to installed packages only.
func FuzzParseStatus(f *testing.F) {
	f.Add(status)
	f.Fuzz(func(t *testing.T, text string) {
		for k := range parseStatus([]byte(text)) {
			if !strings.Contains(k, ":") {
				t.Errorf("key %q has no architecture", k)
			}
		}
	})
}
