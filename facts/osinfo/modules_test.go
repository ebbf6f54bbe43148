package osinfo

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

// modprobeTree is a tree whose modprobe.d files exercise kmod's order: a
// name in /etc hides the same name in /usr/lib, a link to /dev/null masks
// one, files are read by name across directories, and only .conf files
// that are not hidden count.
func modprobeTree() map[string]any {
	return map[string]any{
		"usr/lib/modprobe.d/50-cis.conf":    "install cramfs /bin/false\ninstall hfs /bin/false\n",
		"etc/modprobe.d/50-cis.conf":        "# the admin's copy wins\ninstall cramfs /bin/true\n",
		"lib/modprobe.d/10-early.conf":      "install udf /sbin/modprobe --ignore-install udf\n",
		"run/modprobe.d/20-run.conf":        "blacklist usb-storage\ninstall usb-storage \\\n  /bin/false\n",
		"etc/modprobe.d/30-masked.conf":     collecttest.Symlink("/dev/null"),
		"usr/lib/modprobe.d/30-masked.conf": "install sctp /bin/false\n",
		"etc/modprobe.d/40-late.conf":       "install udf /bin/false\n # install dccp /bin/false\n#install rds /bin/false\ninstall tipc\ninstall jffs2\t/bin/false # why\nblacklist\nblacklist bad]name\n",
		"etc/modprobe.d/.hidden.conf":       "install freevxfs /bin/false\n",
		"etc/modprobe.d/README":             "install hfsplus /bin/false\n",
		"etc/modprobe.d/dir.conf/":          nil,
		"etc/modprobe.d/dangling.conf":      collecttest.Symlink("/nonexistent.conf"),
	}
}

func TestModprobeFollowsKmodsOrder(t *testing.T) {
	dir := collecttest.TempTreeOf(t, modprobeTree())
	f := newDoc(facts.KindRootfs)
	if err := collectOne(t, collecttest.NewEnv(t, dir, false), f, "kernel_modules"); err != nil {
		t.Fatal(err)
	}
	m := f.KernelModules
	wantFiles := []string{"/lib/modprobe.d/10-early.conf", "/run/modprobe.d/20-run.conf", "/etc/modprobe.d/40-late.conf", "/etc/modprobe.d/50-cis.conf"}
	if !slices.Equal(m.Files, wantFiles) {
		t.Errorf("files %q, want %q", m.Files, wantFiles)
	}
	inst := func(cmd, file string, line int) facts.ModuleConfig {
		return facts.ModuleConfig{Install: &facts.ModuleInstall{Command: cmd, File: file, Line: line}}
	}
	want := map[string]facts.ModuleConfig{
		// The first install line holds: 10-early.conf comes before 40-late.conf.
		"udf":    inst("/sbin/modprobe --ignore-install udf", "/lib/modprobe.d/10-early.conf", 1),
		"cramfs": inst("/bin/true", "/etc/modprobe.d/50-cis.conf", 2),
		"usb_storage": {
			Install:   &facts.ModuleInstall{Command: "/bin/false", File: "/run/modprobe.d/20-run.conf", Line: 2},
			Blacklist: &collect.FileLine{File: "/run/modprobe.d/20-run.conf", Line: 1},
		},
		// kmod hands the shell the rest of the line, comment and all.
		"jffs2": inst("/bin/false # why", "/etc/modprobe.d/40-late.conf", 5),
	}
	if !reflect.DeepEqual(m.Modules, want) {
		t.Errorf("modules:\n%s\nwant:\n%s", dumpModules(m.Modules), dumpModules(want))
	}
	if m.Loaded != nil {
		t.Errorf("an image has loaded modules %q", m.Loaded)
	}
}

func dumpModules(m map[string]facts.ModuleConfig) string {
	var b strings.Builder
	for _, k := range sortedKeysOf(m) {
		c := m[k]
		b.WriteString(k + ":")
		if c.Install != nil {
			b.WriteString(" install " + c.Install.Command + " @" + c.Install.File)
		}
		if c.Blacklist != nil {
			b.WriteString(" blacklist @" + c.Blacklist.File)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func sortedKeysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func TestLoadedModulesLive(t *testing.T) {
	tree := modprobeTree()
	tree["proc/modules"] = "usb_storage 81920 1 uas, Live 0x0000000000000000\ncramfs 40960 0 - Live 0x0000000000000000\nusb_storage 1 0 - Live 0x0\n\n"
	f := newDoc(facts.KindHost)
	if err := collectOne(t, collecttest.NewEnv(t, collecttest.TempTreeOf(t, tree), true), f, "kernel_modules"); err != nil {
		t.Fatal(err)
	}
	if want := []string{"cramfs", "usb_storage"}; !slices.Equal(f.KernelModules.Loaded, want) {
		t.Errorf("loaded %q, want %q", f.KernelModules.Loaded, want)
	}
	// A kernel without module support has no /proc/modules: nothing loaded.
	f = newDoc(facts.KindHost)
	if err := collectOne(t, collecttest.NewEnv(t, collecttest.TempTreeOf(t, modprobeTree()), true), f, "kernel_modules"); err != nil {
		t.Fatal(err)
	}
	if f.KernelModules.Loaded == nil || len(f.KernelModules.Loaded) != 0 {
		t.Errorf("loaded %q, want none", f.KernelModules.Loaded)
	}
}

func TestModuleName(t *testing.T) {
	for in, want := range map[string]string{"usb-storage": "usb_storage", "snd-[a-z]-x": "snd_[a-z]_x", "a[-]b": "a[-]b"} {
		if got, ok := moduleName(in); !ok || got != want {
			t.Errorf("moduleName(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "a]b", "a[b"} {
		if got, ok := moduleName(bad); ok {
			t.Errorf("moduleName(%q) = %q, want refused", bad, got)
		}
	}
}

func TestModprobeRefusesHostileTrees(t *testing.T) {
	many := map[string]any{}
	for i := range maxDropInFiles + 1 {
		many[fmt.Sprintf("etc/modprobe.d/f%04d.conf", i)] = ""
	}
	var names strings.Builder
	for i := range maxModuleNames + 1 {
		fmt.Fprintf(&names, "blacklist m%d\n", i)
	}
	for name, tree := range map[string]map[string]any{
		"binary":         {"etc/modprobe.d/a.conf": "install cramfs /bin/false\x00\n"},
		"too large":      {"etc/modprobe.d/a.conf": strings.Repeat("#", maxDropInFile+1)},
		"too many files": many,
		"too many names": {"etc/modprobe.d/a.conf": names.String()},
		"link to a dir":  {"etc/modprobe.d/a.conf": collecttest.Symlink("..")},
	} {
		t.Run(name, func(t *testing.T) {
			f := newDoc(facts.KindRootfs)
			err := collectOne(t, collecttest.NewEnv(t, collecttest.TempTreeOf(t, tree), false), f, "kernel_modules")
			if name == "link to a dir" {
				// A link to a directory is no file: passed over.
				if err != nil || len(f.KernelModules.Files) != 0 {
					t.Errorf("err %v, files %q", err, f.KernelModules.Files)
				}
				return
			}
			if err == nil {
				t.Fatalf("no error; facts %+v", f.KernelModules)
			}
		})
	}
}

// A link out of the tree is followed inside it: the tree's own file is
// read, never the scanning machine's.
func TestModprobeLinkStaysInTree(t *testing.T) {
	dir := collecttest.TempTreeOf(t, map[string]any{
		"etc/modprobe.d/a.conf": collecttest.Symlink("../../../../../../etc/modprobe.d/b.txt"),
		"etc/modprobe.d/b.txt":  "install cramfs /bin/false\n",
	})
	f := newDoc(facts.KindRootfs)
	if err := collectOne(t, collecttest.NewEnv(t, dir, false), f, "kernel_modules"); err != nil {
		t.Fatal(err)
	}
	if c := f.KernelModules.Modules["cramfs"]; c.Install == nil || c.Install.File != "/etc/modprobe.d/b.txt" {
		t.Errorf("cramfs %+v from files %q", c, f.KernelModules.Files)
	}
}
