package osinfo

import (
	"errors"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

func TestGrubDropinOverridesInLexicalOrder(t *testing.T) {
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, map[string]any{
		"etc/default/grub":          "GRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\nif [ -n \"$X\" ]; then\n  GRUB_TERMINAL=console\nfi\n",
		"etc/default/grub.d/20.cfg": "GRUB_CMDLINE_LINUX_DEFAULT=\"${GRUB_CMDLINE_LINUX_DEFAULT} b\"\n",
		"etc/default/grub.d/10.cfg": "GRUB_CMDLINE_LINUX_DEFAULT=\"$GRUB_CMDLINE_LINUX_DEFAULT a\"\n",
		"etc/default/grub.d/30.txt": "GRUB_CMDLINE_LINUX_DEFAULT=ignored\n",
	})
	f := newDoc(facts.KindRootfs)
	if err := collectOne(t, collecttest.NewEnv(t, dir, false), f, "kernel"); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(f.Kernel.Cmdline, " "); got != "quiet a b" {
		t.Errorf("cmdline %q, want %q", got, "quiet a b")
	}
	if f.Kernel.Cmdline == nil || f.Kernel.Installed != nil {
		t.Errorf("kernel %+v", f.Kernel)
	}
	if want := "/etc/default/grub, /etc/default/grub.d/10.cfg, /etc/default/grub.d/20.cfg"; f.Kernel.CmdlineSource != want {
		t.Errorf("source %q, want %q", f.Kernel.CmdlineSource, want)
	}
}

func TestCmdlineSourcePrecedence(t *testing.T) {
	grub := "GRUB_CMDLINE_LINUX=\"from=grub\"\n"
	entries := map[string]any{
		"boot/loader/entries/b.conf": "title B\noptions from=b\n",
		"boot/loader/entries/a.conf": "title A\nlinux /vmlinuz\noptions root=UUID=1 ro\noptions quiet \"x=a b\"\n",
	}
	for _, tc := range []struct {
		name      string
		tree      map[string]any
		want, src string
	}{
		{"kernel-install", map[string]any{"etc/kernel/cmdline": "root=/dev/vda1 rw\n", "etc/default/grub": grub}, "root=/dev/vda1 rw", "/etc/kernel/cmdline"},
		{"loader entries", merge(entries, map[string]any{"etc/default/grub": grub}), "root=UUID=1 ro quiet x=a b", "/boot/loader/entries/a.conf"},
		{"grub", map[string]any{"etc/default/grub": grub}, "from=grub", "/etc/default/grub"},
		{"nothing", map[string]any{"etc/": nil}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			collecttest.WriteTree(t, dir, tc.tree)
			cmd, src, _, err := configuredCmdline(collecttest.NewEnv(t, dir, false).FS)
			if err != nil {
				t.Fatal(err)
			}
			if cmd == nil || strings.Join(cmd, " ") != tc.want || src != tc.src {
				t.Errorf("got %q from %q, want %q from %q", cmd, src, tc.want, tc.src)
			}
		})
	}
}

func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func TestOSReleaseFallbackAndErrors(t *testing.T) {
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, map[string]any{
		// A dangling link: the fallback is read.
		"etc/os-release":     collecttest.Symlink("/usr/lib/os-release.gone"),
		"usr/lib/os-release": "ID=debian\nVERSION_ID=\"12\"\nVERSION_CODENAME=bookworm\nPRETTY_NAME='Debian GNU/Linux 12 (bookworm)'\n",
		"etc/hostname":       "bad\x01host\n",
	})
	f := newDoc(facts.KindRootfs)
	if err := collectOne(t, collecttest.NewEnv(t, dir, false), f, "os"); err != nil {
		t.Fatal(err)
	}
	want := facts.OS{ID: "debian", VersionID: "12", Codename: "bookworm", PrettyName: "Debian GNU/Linux 12 (bookworm)"}
	if *f.OS != want {
		t.Errorf("os %+v, want %+v", *f.OS, want)
	}
	if f.Target.Hostname != "" {
		t.Errorf("hostname with a control character accepted: %q", f.Target.Hostname)
	}

	empty := t.TempDir()
	err := collectOne(t, collecttest.NewEnv(t, empty, false), newDoc(facts.KindRootfs), "os")
	if err == nil || !strings.Contains(err.Error(), "/etc/os-release") || !strings.Contains(err.Error(), "/usr/lib/os-release") {
		t.Errorf("missing os-release: %v, want an error naming both paths", err)
	}
	if !errors.Is(err, ErrNoOSRelease) {
		t.Errorf("missing os-release: %v, want ErrNoOSRelease", err)
	}

	// One that is there but cannot be read is not an absent one.
	huge := t.TempDir()
	collecttest.WriteTree(t, huge, map[string]any{"usr/lib/os-release": strings.Repeat("#", MaxOSRelease+1)})
	if _, _, err := ReadOSRelease(collecttest.OpenFS(t, huge)); err == nil || errors.Is(err, ErrNoOSRelease) {
		t.Errorf("oversized os-release: %v, want an error other than ErrNoOSRelease", err)
	}
}

func TestOSReleaseQuoting(t *testing.T) {
	o, err := parseOSRelease([]byte(`ID=ubuntu
PRETTY_NAME="Say \"hi\" \$HOME \\ ok"
UBUNTU_CODENAME=noble
VERSION_ID=24.04 # trailing comment
`))
	if err != nil {
		t.Fatal(err)
	}
	if o.PrettyName != `Say "hi" $HOME \ ok` || o.Codename != "noble" || o.VersionID != "24.04" {
		t.Errorf("%+v", o)
	}
	if _, err := parseOSRelease([]byte("ID=\"unterminated\n")); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Errorf("unterminated quote: %v", err)
	}
}

// Each parameter of GRUB's defaults is placed on the assignment that put
// it there: a drop-in that appends to "$GRUB_CMDLINE_LINUX" is the place
// of what it appends, not of what it repeats.
func TestGrubParamLocations(t *testing.T) {
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, map[string]any{
		"etc/default/grub": "GRUB_DEFAULT=0\nGRUB_CMDLINE_LINUX_DEFAULT=\"quiet\"\n# cgroups\nGRUB_CMDLINE_LINUX=\"systemd.unified_cgroup_hierarchy=0 console=ttyS0\"\n",
		"etc/default/grub.d/50-gpu.cfg": "GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX modprobe.blacklist=nouveau\"\n" +
			"GRUB_CMDLINE_LINUX=\"$GRUB_CMDLINE_LINUX systemd.unified_cgroup_hierarchy=1\"\n",
	})
	cmd, _, at, err := configuredCmdline(collecttest.NewEnv(t, dir, false).FS)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(cmd, " "); got != "systemd.unified_cgroup_hierarchy=0 console=ttyS0 modprobe.blacklist=nouveau systemd.unified_cgroup_hierarchy=1 quiet" {
		t.Errorf("cmdline %q", got)
	}
	for key, want := range map[string]collect.FileLine{
		"quiet":                            {File: "/etc/default/grub", Line: 2},
		"console":                          {File: "/etc/default/grub", Line: 4},
		"modprobe.blacklist":               {File: "/etc/default/grub.d/50-gpu.cfg", Line: 1},
		"systemd.unified_cgroup_hierarchy": {File: "/etc/default/grub.d/50-gpu.cfg", Line: 2},
	} {
		if at[key] != want {
			t.Errorf("%s at %+v, want %+v", key, at[key], want)
		}
	}
}
