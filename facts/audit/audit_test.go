package audit

import (
	"bytes"
	"context"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

var update = flag.Bool("update", false, "rewrite testdata/golden")

func gather(t *testing.T, dir string, live bool, state ActiveState) (*facts.Audit, error) {
	t.Helper()
	return Collector{State: state}.Collect(context.Background(), &collect.Env{FS: collecttest.OpenFS(t, dir), Live: live})
}

// golden compares the audit facts with testdata/golden/NAME.json.
func golden(t *testing.T, name, root string, a *facts.Audit) {
	t.Helper()
	collecttest.GoldenTree(t, name, root, a, *update)
}

func TestHardenedTree(t *testing.T) {
	root := filepath.Join("testdata", "hardened")
	a, err := gather(t, root, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Installed || !a.Enabled || a.Active != "" {
		t.Errorf("installed %v enabled %v active %q", a.Installed, a.Enabled, a.Active)
	}
	// augenrules joins rules.d/*.rules in name order; README and the
	// generated audit.rules are not what loads.
	var names []string
	for _, f := range a.RulesFiles {
		names = append(names, filepath.Base(f))
	}
	if want := []string{"10-base.rules", "50-gpuhost.rules", "99-finalize.rules"}; !slices.Equal(names, want) {
		t.Errorf("rules files = %v, want %v", names, want)
	}
	var exec, watches int
	for _, r := range a.Rules {
		if r.Path == "/nowhere" || slices.Contains(r.Syscalls, "all") {
			t.Errorf("read a rule from a file that does not load: %+v", r)
		}
		if r.Kind == "syscall" && slices.Contains(r.Syscalls, "execve") {
			exec++
		}
		if r.Kind == "watch" {
			watches++
		}
	}
	if exec != 4 || watches != 7 {
		t.Errorf("%d execve rules and %d watches, want 4 and 7", exec, watches)
	}
	// "-a exit,always" is the same rule as "-a always,exit".
	r := a.Rules[6]
	if r.List != "exit" || r.Action != "always" || !slices.Equal(r.Syscalls, []string{"execve", "execveat"}) || r.Key != "user-exec" {
		t.Errorf("rule 6 = %+v", r)
	}
	if c := a.Config; c.MaxLogFileAction != "keep_logs" || c.DiskFullAction != "halt" || c.NumLogs != 10 {
		t.Errorf("auditd.conf = %+v", c)
	}
	if l := a.Config.Locations; l["disk_full_action"].Line != 14 || l["num_logs"].Line != 7 || len(l) != 7 {
		t.Errorf("auditd.conf locations = %v", l)
	}
	if rm := a.Remote; !rm.AudispRemoteActive || rm.AudispRemoteServer != "logs.example" || rm.JournalUpload {
		t.Errorf("remote = %+v", rm)
	}
	golden(t, "hardened", root, a)
}

func TestWeakTree(t *testing.T) {
	root := filepath.Join("testdata", "weak")
	a, err := gather(t, root, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Installed || a.Enabled {
		t.Errorf("installed %v enabled %v", a.Installed, a.Enabled)
	}
	if len(a.RulesFiles) != 1 || !strings.HasSuffix(a.RulesFiles[0], "/etc/audit/audit.rules") {
		t.Errorf("without rules.d, audit.rules loads: %v", a.RulesFiles)
	}
	// auditd's defaults fill what auditd.conf leaves out.
	if c := a.Config; c.MaxLogFileAction != "rotate" || c.DiskFullAction != "ignore" || c.SpaceLeftAction != "syslog" || c.NumLogs != 5 {
		t.Errorf("auditd.conf = %+v", c)
	}
	// What the file sets is placed on its line; a default has no line.
	want := map[string]collect.FileLine{
		"log_file":         {File: "/etc/audit/auditd.conf", Line: 1},
		"disk_full_action": {File: "/etc/audit/auditd.conf", Line: 2},
	}
	if !maps.Equal(a.Config.Locations, want) {
		t.Errorf("auditd.conf locations = %v, want %v", a.Config.Locations, want)
	}
	golden(t, "weak", root, a)
}

func TestNoAuditd(t *testing.T) {
	a, err := gather(t, t.TempDir(), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Installed || a.Enabled || len(a.Rules) != 0 || a.Config.MaxLogFileAction != "rotate" {
		t.Errorf("audit = %+v", a)
	}
}

func TestLiveAsksTheServiceManager(t *testing.T) {
	var asked string
	state := func(_ context.Context, _ *collect.Env, unit string) (string, string) {
		asked = unit
		return "failed", ""
	}
	a, err := gather(t, filepath.Join("testdata", "hardened"), true, state)
	if err != nil {
		t.Fatal(err)
	}
	if asked != "auditd.service" || a.Active != "failed" {
		t.Errorf("asked %q, active %q", asked, a.Active)
	}
}

func TestBadRulesNameFileAndLine(t *testing.T) {
	for _, c := range []struct{ rules, want string }{
		{"-w /etc/ssh -p wz\n", "line 1: -p \"wz\""},
		{"-D\n-a always\n", "line 2: -a \"always\""},
		{"-a always,nowhere -S execve\n", "unknown list \"nowhere\""},
		{"-a always,exit -F auid\n", "-F \"auid\""},
		{"-w\n", "-w needs an argument"},
		{"execve\n", "unexpected \"execve\""},
	} {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "etc/audit/rules.d"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "etc/audit/rules.d/50-x.rules"), []byte(c.rules), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := gather(t, dir, false, nil)
		if err == nil || !strings.Contains(err.Error(), "/etc/audit/rules.d/50-x.rules") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want the file and %q", c.rules, err, c.want)
		}
	}
}

func TestBadAuditdConf(t *testing.T) {
	for _, conf := range []string{"num_logs = many\n", "just words\n"} {
		dir := t.TempDir()
		if err := os.MkdirAll(filepath.Join(dir, "etc/audit"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "etc/audit/auditd.conf"), []byte(conf), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := gather(t, dir, false, nil); err == nil || !strings.Contains(err.Error(), "/etc/audit/auditd.conf") {
			t.Errorf("%q: error %v, want one naming auditd.conf", conf, err)
		}
	}
}

func TestWatchDefaultsToAllPermissions(t *testing.T) {
	rules, err := ParseRules("x.rules", []byte("-w /etc/gpuhost -k cfg\n"))
	if err != nil {
		t.Fatal(err)
	}
	if rules[0].Perms != "arwx" || rules[0].Path != "/etc/gpuhost" || rules[0].Key != "cfg" {
		t.Errorf("rule = %+v", rules[0])
	}
}

func FuzzParseRules(f *testing.F) {
	for _, s := range []string{
		"-a always,exit -F arch=b64 -S execve -F euid=0 -k root-exec\n",
		"-w /etc/ssh -p wa -k ssh\n-e 2\n",
		"-a exit,always -F dir=/etc -F perm=wa -C auid!=uid\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rules, err := ParseRules("fuzz.rules", data)
		if err != nil {
			return
		}
		for _, r := range rules {
			if r.Kind == "" || r.Syscalls == nil || r.Fields == nil || strings.Trim(r.Perms, "arwx") != "" {
				t.Fatalf("rule %+v from %q", r, data)
			}
		}
	})
}

func FuzzParseKeyValues(f *testing.F) {
	f.Add([]byte("log_file = /var/log/audit/audit.log\nnum_logs = 5\n# c\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		kv, err := ParseKeyValues("fuzz.conf", data)
		if err != nil {
			return
		}
		for k, v := range kv {
			if k != strings.ToLower(k) || strings.TrimSpace(k) != k {
				t.Fatalf("key %q from %q", k, data)
			}
			if v.Line < 1 || v.Line > bytes.Count(data, []byte("\n"))+1 {
				t.Fatalf("key %q on line %d of %q", k, v.Line, data)
			}
		}
	})
}
