package rootfs

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// fakeHost writes a build machine's apt configuration under a temp root.
func fakeHost(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

const debianSources = `# main archive
Types: deb
URIs: http://mirror.example.test/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://mirror.example.test/debian-security
Suites: bookworm-security
Components: main
`

func prepare(t *testing.T, host string, raw map[string]interface{}) (*Config, []string, error) {
	t.Helper()
	c := &Config{hostRoot: host}
	if _, ok := raw["packer_build_name"]; !ok {
		raw["packer_build_name"] = "test"
	}
	warns, err := c.Prepare(raw)
	return c, warns, err
}

func TestPrepareDefaults(t *testing.T) {
	host := fakeHost(t, map[string]string{"etc/apt/sources.list.d/debian.sources": debianSources})
	c, warns, err := prepare(t, host, map[string]interface{}{"suite": "bookworm"})
	if err != nil {
		t.Fatal(err)
	}
	if len(warns) != 0 {
		t.Errorf("warnings: %v", warns)
	}
	if c.Distribution != "debian" || c.Variant != "minbase" || c.OutputFormat != "dir" {
		t.Errorf("defaults: distribution %q variant %q format %q", c.Distribution, c.Variant, c.OutputFormat)
	}
	if !slices.Equal(c.Components, []string{"main"}) {
		t.Errorf("components %v", c.Components)
	}
	if c.Mirror != "http://mirror.example.test/debian" {
		t.Errorf("mirror %q", c.Mirror)
	}
	wd, _ := os.Getwd()
	if c.OutputDir != filepath.Join(wd, "output-test") || c.WorkDir != c.OutputDir {
		t.Errorf("output_dir %q work_dir %q", c.OutputDir, c.WorkDir)
	}
	if !slices.Equal(c.Mounts, defaultMounts) {
		t.Errorf("mounts %v", c.Mounts)
	}
}

func TestPrepareListsEveryProblem(t *testing.T) {
	_, _, err := prepare(t, t.TempDir(), map[string]interface{}{
		"suite":          "trusty",
		"distribution":   "arch",
		"variant":        "tiny",
		"components":     []string{"main", "Bad Comp"},
		"keyring":        "/nonexistent/keyring.gpg",
		"mirror":         "ftp://x",
		"snapshot":       "2025-01-01",
		"extra_packages": []string{"curl", "--force-yes"},
		"output_format":  "iso",
		"mounts":         []string{"/proc", "/home", "/proc"},
		"work_dir":       "/tmp/has space",
	})
	if err == nil {
		t.Fatal("Prepare accepted a bad config")
	}
	msg := err.Error()
	for _, want := range []string{
		`suite: unsupported "trusty"`,
		`distribution: unsupported "arch"`,
		`variant: unsupported "tiny"`,
		`components: invalid component "Bad Comp"`,
		"keyring: ",
		"snapshot and mirror are exclusive",
		`extra_packages: invalid package "--force-yes"`,
		`output_format: unsupported "iso"`,
		`mounts: unsupported "/home"`,
		`mounts: "/proc" is listed twice`,
		"work_dir: ",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not mention %q:\n%s", want, msg)
		}
	}
	for _, line := range strings.Split(msg, "\n") {
		if line != "" && strings.ToLower(line[:1]) != line[:1] {
			t.Errorf("message does not start in lower case: %q", line)
		}
	}
}

func TestPrepareFieldChecks(t *testing.T) {
	host := fakeHost(t, map[string]string{"etc/apt/sources.list.d/debian.sources": debianSources})
	cases := []struct {
		name string
		raw  map[string]interface{}
		want string
	}{
		{"no suite", map[string]interface{}{}, "suite is required"},
		{"mismatch", map[string]interface{}{"suite": "jammy", "distribution": "debian"}, `distribution: "debian" does not match suite "jammy"`},
		{"raw needs size", map[string]interface{}{"suite": "bookworm", "output_format": "raw"}, "image_size is required"},
		{"bad size", map[string]interface{}{"suite": "bookworm", "output_format": "qcow2", "image_size": "2 GB"}, "image_size: invalid"},
		{"bad mirror", map[string]interface{}{"suite": "bookworm", "mirror": "deb http://x"}, "mirror: "},
		{"bad snapshot", map[string]interface{}{"suite": "bookworm", "snapshot": "20251399T000000Z"}, "snapshot: invalid timestamp"},
		{"remove dir", map[string]interface{}{"suite": "bookworm", "remove_rootfs": true}, "remove_rootfs: "},
		{"bad qcow2 compression", map[string]interface{}{"suite": "bookworm", "output_format": "qcow2", "image_size": "1G", "qcow2_compression": "xz"}, `qcow2_compression: unsupported "xz"; use zlib or zstd`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := prepare(t, host, tc.raw)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestPrepareUbuntuWithoutMirrorFailsAtRun(t *testing.T) {
	host := fakeHost(t, map[string]string{"etc/apt/sources.list.d/debian.sources": debianSources})
	c, _, err := prepare(t, host, map[string]interface{}{"suite": "jammy"})
	if err != nil {
		t.Fatalf("Prepare must accept it (packer validate on a Debian machine): %v", err)
	}
	if c.Mirror != "" || c.mirrorErr == nil || !strings.Contains(c.mirrorErr.Error(), "mirror: none set") {
		t.Fatalf("mirror %q, mirrorErr %v", c.Mirror, c.mirrorErr)
	}
	if !slices.Equal(c.Components, []string{"main", "restricted", "universe"}) {
		t.Errorf("ubuntu components %v", c.Components)
	}
}

func TestSnapshotRewritesMirror(t *testing.T) {
	for _, tc := range []struct{ suite, want string }{
		{"bookworm", "http://snapshot.debian.org/archive/debian/20250101T000000Z"},
		{"noble", "http://snapshot.ubuntu.com/ubuntu/20250101T000000Z"},
	} {
		c, _, err := prepare(t, t.TempDir(), map[string]interface{}{"suite": tc.suite, "snapshot": "20250101T000000Z"})
		if err != nil {
			t.Fatal(err)
		}
		if c.Mirror != tc.want {
			t.Errorf("%s: mirror %q, want %q", tc.suite, c.Mirror, tc.want)
		}
		args := mmdebstrapArgs(c, "/r")
		if !slices.Contains(args, `--aptopt=Acquire::Check-Valid-Until "false"`) {
			t.Errorf("%s: snapshot build does not skip Valid-Until: %v", tc.suite, args)
		}
	}
}

func TestHostMirror(t *testing.T) {
	cases := []struct {
		name        string
		files       map[string]string
		dist, suite string
		want        string
	}{
		{"deb822 exact", map[string]string{"etc/apt/sources.list.d/debian.sources": debianSources}, "debian", "bookworm", "http://mirror.example.test/debian"},
		{"deb822 other debian suite", map[string]string{"etc/apt/sources.list.d/debian.sources": debianSources}, "debian", "trixie", "http://mirror.example.test/debian"},
		{"disabled stanza skipped", map[string]string{"etc/apt/sources.list.d/a.sources": "Enabled: no\nTypes: deb\nURIs: http://off.test/debian\nSuites: bookworm\n\n" + debianSources}, "debian", "bookworm", "http://mirror.example.test/debian"},
		{"deb-src skipped", map[string]string{"etc/apt/sources.list.d/a.sources": "Types: deb-src\nURIs: http://src.test/debian\nSuites: bookworm\n\n" + debianSources}, "debian", "bookworm", "http://mirror.example.test/debian"},
		{"continuation lines", map[string]string{"etc/apt/sources.list.d/a.sources": "Types: deb\nURIs:\n http://cont.test/debian\nSuites: bookworm\n"}, "debian", "bookworm", "http://cont.test/debian"},
		{"one-line", map[string]string{"etc/apt/sources.list": "# x\ndeb-src http://src.test/debian bookworm main\ndeb [arch=amd64 signed-by=/k.gpg] http://one.test/debian bookworm main\n"}, "debian", "bookworm", "http://one.test/debian"},
		{"ubuntu on ubuntu", map[string]string{"etc/apt/sources.list.d/ubuntu.sources": "Types: deb\nURIs: http://ubuntu.test/ubuntu\nSuites: noble noble-updates\n"}, "ubuntu", "noble", "http://ubuntu.test/ubuntu"},
		{"ubuntu on debian", map[string]string{"etc/apt/sources.list.d/debian.sources": debianSources}, "ubuntu", "noble", ""},
		{"security only", map[string]string{"etc/apt/sources.list": "deb http://sec.test/debian-security bookworm-security main\n"}, "debian", "bookworm", ""},
		{"nothing", map[string]string{}, "debian", "bookworm", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := hostMirror(fakeHost(t, tc.files), tc.dist, tc.suite)
			if got != tc.want {
				t.Errorf("got %q (%v), want %q", got, err, tc.want)
			}
			if tc.want == "" && err == nil {
				t.Error("no mirror and no error")
			}
		})
	}
}

func TestMmdebstrapArgsAptCache(t *testing.T) {
	host := fakeHost(t, map[string]string{"etc/apt/sources.list.d/debian.sources": debianSources})
	c, _, err := prepare(t, host, map[string]interface{}{
		"suite": "bookworm", "apt_cache_dir": "/var/cache/gh", "extra_packages": []string{"curl", "nvidia-smi=535.261.03-1"},
		"components": []string{"main", "contrib"},
	})
	if err != nil {
		t.Fatal(err)
	}
	got := mmdebstrapArgs(c, "/w/rootfs")
	want := []string{
		"--mode=root", "--variant=minbase", "--components=main,contrib", "--include=curl,nvidia-smi=535.261.03-1",
		"--skip=cleanup/apt/lists",
		`--setup-hook=mkdir -p "$1/etc/dpkg/dpkg.cfg.d" && echo force-unsafe-io >"$1/etc/dpkg/dpkg.cfg.d/99gpuhost-bootstrap-unsafe-io"`,
		`--customize-hook=rm -f "$1/etc/dpkg/dpkg.cfg.d/99gpuhost-bootstrap-unsafe-io"`,
		"--skip=essential/unlink",
		`--setup-hook=mkdir -p "$1/var/cache/apt/archives" && mount --bind '/var/cache/gh' "$1/var/cache/apt/archives"`,
		`--customize-hook=umount "$1/var/cache/apt/archives"`,
		"bookworm", "/w/rootfs", "http://mirror.example.test/debian",
	}
	if !slices.Equal(got, want) {
		t.Errorf("args\n got %q\nwant %q", got, want)
	}
}

func TestPlan(t *testing.T) {
	c := &Config{Mounts: defaultMounts}
	var names []string
	var types []string
	for _, s := range plan(c) {
		names = append(names, s.name)
		types = append(types, reflect.TypeOf(s.step).Elem().Name())
	}
	// The cache steps sit around mmdebstrap, before any provisioner.
	// The tree's digest is taken once it is final, with nothing mounted.
	want := []string{"dirs", "cache-lookup", "mmdebstrap", "cache-save", "policy-rc.d", "mount", "provision", "unmount", "tree-digest", "pack"}
	if !slices.Equal(names, want) {
		t.Fatalf("plan %v, want %v", names, want)
	}
	if types[1] != "stepBootstrapCacheLookup" || types[3] != "stepBootstrapCacheSave" || types[5] != "stepMount" || types[6] != "stepProvision" || types[8] != "stepTreeDigest" || types[9] != "stepPack" {
		t.Errorf("step types %v", types)
	}
	// The unmount step undoes the very mount and policy-rc.d steps of the plan.
	steps := plan(c)
	early := steps[7].step.(*stepEarlyCleanup)
	if len(early.cleaners) != 2 || early.cleaners[0] != steps[5].step.(earlyCleaner) || early.cleaners[1] != steps[4].step.(earlyCleaner) {
		t.Errorf("unmount step cleans %v", early.cleaners)
	}
}

func TestMountsSortedParentsFirst(t *testing.T) {
	host := fakeHost(t, map[string]string{"etc/apt/sources.list.d/debian.sources": debianSources})
	c, _, err := prepare(t, host, map[string]interface{}{"suite": "bookworm", "mounts": []string{"/dev/pts", "/proc", "/dev"}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Mounts, []string{"/proc", "/dev", "/dev/pts"}) {
		t.Errorf("mounts %v", c.Mounts)
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int64{"1": 1, "2K": 2048, "3M": 3 << 20, "4G": 4 << 30, "1T": 1 << 40} {
		got, err := parseSize(in)
		if err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "0", "1.5G", "G", "99999999999999999999T", "-1"} {
		if _, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) accepted", in)
		}
	}
}

func TestMountsUnderIn(t *testing.T) {
	mi := filepath.Join(t.TempDir(), "mountinfo")
	body := "22 1 0:21 / /proc rw - proc proc rw\n" +
		"30 22 0:5 / /w/root/dev rw - devtmpfs udev rw\n" +
		"31 30 0:6 / /w/root\\040x/proc rw - proc proc rw\n" +
		"32 30 0:6 / /w/rootfs2 rw - proc proc rw\n"
	if err := os.WriteFile(mi, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := mountsUnderIn(mi, "/w/root")
	if err != nil || !slices.Equal(got, []string{"/w/root/dev"}) {
		t.Errorf("got %v, %v", got, err)
	}
	got, _ = mountsUnderIn(mi, "/w/root x")
	if !slices.Equal(got, []string{"/w/root x/proc"}) {
		t.Errorf("escaped path: got %v", got)
	}
}

func TestTimingsTable(t *testing.T) {
	tm := &timings{}
	tm.add("mmdebstrap", 31_500_000_000)
	tm.add("pack", 2_000_000_000)
	got := tm.table()
	for _, want := range []string{"mmdebstrap        31.5", "pack               2.0", "total             33.5"} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks %q:\n%s", want, got)
		}
	}
}

func TestPrepareQCOW2Compression(t *testing.T) {
	host := fakeHost(t, map[string]string{"etc/apt/sources.list.d/debian.sources": debianSources})
	cases := []struct {
		name string
		raw  map[string]interface{}
		want string // the compression Prepare settles on
		warn bool
	}{
		{"qcow2 by default zlib", map[string]interface{}{"output_format": "qcow2", "image_size": "1G"}, "zlib", false},
		{"qcow2 zstd", map[string]interface{}{"output_format": "qcow2", "image_size": "1G", "qcow2_compression": "zstd"}, "zstd", false},
		{"a disk is qcow2 by default", map[string]interface{}{"output_format": "disk", "image_size": "1G", "qcow2_compression": "zstd"}, "zstd", false},
		{"a raw disk has no clusters to compress", map[string]interface{}{"output_format": "disk", "disk_format": "raw", "image_size": "1G", "qcow2_compression": "zstd"}, "zstd", true},
		{"a tarball neither", map[string]interface{}{"output_format": "tar", "qcow2_compression": "zstd"}, "zstd", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.raw["suite"] = "bookworm"
			c, warns, err := prepare(t, host, tc.raw)
			if err != nil {
				t.Fatal(err)
			}
			if c.QCOW2Compression != tc.want {
				t.Errorf("qcow2_compression %q, want %q", c.QCOW2Compression, tc.want)
			}
			warned := slices.ContainsFunc(warns, func(w string) bool { return strings.HasPrefix(w, "qcow2_compression is ignored") })
			if warned != tc.warn {
				t.Errorf("warned %v, want %v: %q", warned, tc.warn, warns)
			}
		})
	}
}
