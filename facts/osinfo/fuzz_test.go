package osinfo

import (
	"slices"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
)

func FuzzOSRelease(f *testing.F) {
	f.Add([]byte("ID=ubuntu\nPRETTY_NAME=\"Ubuntu \\\"x\\\"\"\nVERSION_ID='22.04'\n"))
	f.Add([]byte("export A=$B${C:-d}\nif [ x ]; then\nfi\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = parseOSRelease(data)
	})
}

// FuzzModprobe holds the modprobe.d reader to what it promises of any
// file: module names as kmod compares them, install lines with a command
// and a line, never more names than the bound.
func FuzzModprobe(f *testing.F) {
	f.Add([]byte("install cramfs /bin/false\nblacklist usb-storage\n"))
	f.Add([]byte("install snd-[a-z] \\\n /bin/true\n#install x y\n install  y\t z \nblacklist a]b\n"))
	f.Add([]byte("options nvidia NVreg_X=1\nalias pci:v* nvidia\nsoftdep a pre: b\n\\"))
	f.Fuzz(func(t *testing.T, data []byte) {
		modules := map[string]facts.ModuleConfig{}
		if err := parseModprobe(data, "/etc/modprobe.d/f.conf", modules); err != nil {
			return
		}
		if len(modules) > maxModuleNames {
			t.Fatalf("%d modules", len(modules))
		}
		for name, c := range modules {
			if again, ok := moduleName(name); !ok || again != name {
				t.Errorf("module %q is not in kmod's form (%q)", name, again)
			}
			if c.Install == nil && c.Blacklist == nil {
				t.Errorf("module %q has neither install nor blacklist", name)
			}
			if c.Install != nil && (c.Install.Line < 1 || strings.Trim(c.Install.Command, " \t") != c.Install.Command) {
				t.Errorf("module %q: install %+v", name, c.Install)
			}
		}
		loaded, err := parseProcModules(data)
		if err == nil && !slices.IsSorted(loaded) {
			t.Errorf("loaded %q not sorted", loaded)
		}
	})
}

// FuzzSysctl holds the sysctl.d reader to what it promises of any file:
// dotted keys whose path stays in /proc/sys, globs apart from plain keys,
// no key both set and excluded, trimmed values, and the bound.
func FuzzSysctl(f *testing.F) {
	f.Add([]byte("net.ipv4.ip_forward = 0\n-net.ipv4.conf.all.rp_filter\nnet.ipv4.conf.*.rp_filter = 2\n"))
	f.Add([]byte("; c\n# c\nnet/ipv4/conf/eth0.1/rp_filter=1\n-kernel.x = 1\n../../etc = 1\nkernel..a..b = 2\n-[x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &facts.Sysctl{Configured: map[string]facts.SysctlSetting{}, Globs: []facts.SysctlGlob{}, Excluded: map[string]collect.FileLine{}}
		if err := parseSysctl(data, "/etc/sysctl.d/f.conf", s); err != nil {
			return
		}
		if n := len(s.Configured) + len(s.Globs) + len(s.Excluded); n > maxSysctlKeys {
			t.Fatalf("%d keys", n)
		}
		for k, v := range s.Configured {
			if isGlob(k) || !safeProcSysPath(k) || strings.TrimSpace(v.Value) != v.Value || v.Line < 1 {
				t.Errorf("configured %q = %+v", k, v)
			}
			if _, both := s.Excluded[k]; both {
				t.Errorf("%q is both set and excluded", k)
			}
		}
		for k := range s.Excluded {
			if isGlob(k) || !safeProcSysPath(k) {
				t.Errorf("excluded %q", k)
			}
		}
		seen := map[string]bool{}
		for _, g := range s.Globs {
			if !isGlob(g.Pattern) || !safeProcSysPath(g.Pattern) || seen[g.Pattern] {
				t.Errorf("glob %+v", g)
			}
			seen[g.Pattern] = true
		}
	})
}

// FuzzLimits holds the limits.conf reader to four-word lines of a known
// type.
func FuzzLimits(f *testing.F) {
	f.Add([]byte("* hard core 0\n@g - nproc 10 # c\nroot soft nofile\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := parseLimits(data, "/etc/security/limits.conf", nil)
		if err != nil {
			return
		}
		for _, e := range entries {
			if e.Type != "soft" && e.Type != "hard" && e.Type != "-" || e.Domain == "" || e.Item == "" || e.Value == "" || e.Line < 1 {
				t.Errorf("entry %+v", e)
			}
		}
	})
}
