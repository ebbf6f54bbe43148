package ssh

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"testing/fstest"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

func TestParseProcStartTime(t *testing.T) {
	// A command name may hold spaces and parentheses of its own.
	line := "4242 (sshd) x) (y) S 1 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 746429 16003072 1917 18446744073709551615\n"
	if ticks, err := ParseProcStartTime(line); err != nil || ticks != 746429 {
		t.Errorf("starttime = %d, %v; want 746429", ticks, err)
	}
	for name, bad := range map[string]string{
		"no name":   "4242 sshd S 1",
		"short":     "4242 (sshd) S 1 4242",
		"not ticks": "4242 (sshd) S 1 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 -5 1",
		"too large": "4242 (sshd) S 1 4242 4242 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 18446744073709551615 1",
	} {
		if _, err := ParseProcStartTime(bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if b, err := ParseBootTime("cpu  1 2 3\nintr 5 6\nbtime 1764748800\nprocesses 9\n"); err != nil || !b.Equal(time.Unix(1764748800, 0)) {
		t.Errorf("boot time = %v, %v", b, err)
	}
	for _, bad := range []string{"cpu 1\n", "btime -1\n", "btime soon\n"} {
		if _, err := ParseBootTime(bad); err == nil {
			t.Errorf("%q: accepted", bad)
		}
	}
}

// ageTree is a host whose sshd (pid 700) started 100 s after a boot at
// boot, with an sshd_config and one include, and the pid file given.
func ageTree(boot time.Time, pidFile string, pidTime, configTime, includeTime time.Time) sysroot.FS {
	return sysroot.FromFS(fstest.MapFS{
		"proc/stat":                             {Data: []byte("cpu 1 2\nbtime " + strconv.FormatInt(boot.Unix(), 10) + "\n")},
		"proc/700/stat":                         {Data: []byte("700 (sshd) S 1 700 700 0 -1 4194560 1 0 0 0 0 0 0 0 20 0 1 0 10000 1 1\n")},
		"run/sshd.pid":                          {Data: []byte(pidFile), ModTime: pidTime},
		"etc/ssh/sshd_config":                   {Data: []byte("Include /etc/ssh/sshd_config.d/*.conf\nPasswordAuthentication no\n"), ModTime: configTime},
		"etc/ssh/sshd_config.d/50-cloud.conf":   {Data: []byte("PermitRootLogin no\n"), ModTime: includeTime},
		"etc/ssh/sshd_config.d/README.disabled": {Data: []byte("not read\n"), ModTime: includeTime.Add(time.Hour)},
	}, "host")
}

func TestSSHDAge(t *testing.T) {
	boot := time.Unix(1764748800, 0)
	start := boot.Add(100 * time.Second)
	reload := start.Add(time.Hour)
	for _, tc := range []struct {
		name                 string
		pidFile              string
		config, include      time.Time
		from, loaded, newest string
		newer                bool
	}{
		{name: "reloaded after the edit", pidFile: "700\n", config: start.Add(time.Minute), include: start.Add(-time.Hour),
			from: "pid_file", loaded: stamp(reload), newest: "/etc/ssh/sshd_config"},
		{name: "include edited after the reload", pidFile: "700\n", config: start, include: reload.Add(time.Second),
			from: "pid_file", loaded: stamp(reload), newest: "/etc/ssh/sshd_config.d/50-cloud.conf", newer: true},
		{name: "another daemon's pid file", pidFile: "701\n", config: start.Add(time.Minute), include: start.Add(-time.Hour),
			from: "process_start", loaded: stamp(start), newest: "/etc/ssh/sshd_config", newer: true},
		{name: "written as it started", pidFile: "", config: start.Add(time.Second / 2), include: start.Add(-time.Hour),
			from: "process_start", loaded: stamp(start), newest: "/etc/ssh/sshd_config"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys := ageTree(boot, tc.pidFile, reload, tc.config, tc.include)
			cfg, err := LoadSSHD(fsys, SSHDConfigPath)
			if err != nil {
				t.Fatal(err)
			}
			got := sshdAge(fsys, 700, cfg)
			if got.AgeError != "" || got.StartedAt != stamp(start) || got.LoadedFrom != tc.from || got.LoadedAt != tc.loaded ||
				got.NewestConfig != tc.newest || got.ConfigNewer != tc.newer {
				t.Errorf("age = %+v", got)
			}
		})
	}
	fsys := ageTree(boot, "700", reload, start, start)
	cfg, err := LoadSSHD(fsys, SSHDConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if got := sshdAge(fsys, 9, cfg); got.AgeError == "" || got != (facts.SSHDaemonAge{AgeError: got.AgeError}) {
		t.Errorf("age of a pid that is gone = %+v", got)
	}
}

// Issue 48: a drop-in deleted after the daemon started, and a file
// deployed with its old modification time kept, both change what a
// reload reads; the first shows as its folder's change, the second as its
// inode's.
func TestSSHDNewestChangeSeesDeletionsAndKeptTimes(t *testing.T) {
	root := t.TempDir()
	write := func(name, text string) {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("etc/ssh/sshd_config", "Include /etc/ssh/sshd_config.d/*.conf\nPasswordAuthentication no\n")
	write("etc/ssh/sshd_config.d/a.conf", "PasswordAuthentication yes\n")
	old := time.Now().Add(-24 * time.Hour)
	keepOld := func(names ...string) {
		for _, p := range names {
			if err := os.Chtimes(filepath.Join(root, p), old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	keepOld("etc/ssh/sshd_config", "etc/ssh/sshd_config.d/a.conf", "etc/ssh/sshd_config.d")
	fsys := collecttest.OpenFS(t, root)
	newest := func() (time.Time, string) {
		t.Helper()
		cfg, err := LoadSSHD(fsys, SSHDConfigPath)
		if err != nil {
			t.Fatal(err)
		}
		m, which, err := newestChange(fsys, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return m, which
	}
	// The change times are now: the daemon "started" after them.
	time.Sleep(20 * time.Millisecond)
	started := time.Now()
	time.Sleep(20 * time.Millisecond)
	if m, _ := newest(); m.After(started) {
		t.Fatalf("nothing changed yet, newest change %v after %v", m, started)
	}
	// Removed, with the folder's times set back: its change time moves.
	if err := os.Remove(filepath.Join(root, "etc/ssh/sshd_config.d/a.conf")); err != nil {
		t.Fatal(err)
	}
	keepOld("etc/ssh/sshd_config.d")
	if m, which := newest(); !m.After(started) || which != "/etc/ssh/sshd_config.d (a file added or removed)" {
		t.Errorf("after a drop-in's removal: %v %q; want the folder, after %v", m, which, started)
	}
	// Deployed with its old time kept.
	started = time.Now()
	time.Sleep(20 * time.Millisecond)
	write("etc/ssh/sshd_config.d/b.conf", "PasswordAuthentication yes\n")
	keepOld("etc/ssh/sshd_config.d/b.conf", "etc/ssh/sshd_config.d")
	if m, which := newest(); !m.After(started) || which != "/etc/ssh/sshd_config.d/b.conf" {
		t.Errorf("after a deploy keeping the old time: %v %q; want b.conf, after %v", m, which, started)
	}
}
