package access

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite testdata/golden")

func gather(t *testing.T, dir string) (*facts.Access, error) {
	t.Helper()
	return Collect(context.Background(), &collect.Env{FS: collecttest.OpenFS(t, dir)})
}

// copyTree copies a testdata tree into a temporary directory, where a
// test may change modes that git does not keep.
func copyTree(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

func golden(t *testing.T, name string, a *facts.Access) {
	t.Helper()
	testutil.GoldenJSON(t, filepath.Join("testdata", "golden", name+".json"), a, *update)
}

func TestHardenedTree(t *testing.T) {
	root := copyTree(t, filepath.Join("testdata", "hardened"))
	a, err := gather(t, root)
	if err != nil {
		t.Fatal(err)
	}
	pw := map[string]string{}
	for _, u := range a.Users {
		pw[u.Name] = u.Password
	}
	if pw["root"] != "locked" || pw["alice"] != "locked" || pw["dev"] != "hash" || pw["eve"] != "locked" {
		t.Errorf("passwords = %v", pw)
	}
	s := a.Sudo
	// The backup (~) and the name with a dot are never read.
	if want := []string{"/etc/sudoers", "/etc/sudoers.d/50-gpuhost", "/etc/sudoers.d/README"}; !slices.Equal(s.Files, want) {
		t.Errorf("sudoers files = %v, want %v", s.Files, want)
	}
	if len(s.Rules) != 3 {
		t.Fatalf("rules = %+v", s.Rules)
	}
	admin, trainers := s.Rules[1], s.Rules[2]
	if !slices.Equal(admin.Users, []string{"%gpuhost-admin"}) || !admin.AllCommands || admin.NoPasswd || !slices.Equal(admin.RunAs, []string{"ALL:ALL"}) {
		t.Errorf("admin rule = %+v", admin)
	}
	// Aliases are expanded, and a continued line is one rule.
	if !slices.Equal(trainers.Users, []string{"%gpuhost-dev"}) || trainers.AllCommands ||
		!slices.Equal(trainers.Commands, []string{"/usr/bin/systemctl restart train.service", "/usr/bin/systemctl status train.service"}) || trainers.Line != 7 {
		t.Errorf("trainers rule = %+v", trainers)
	}
	var defaults []string
	for _, d := range s.Defaults {
		defaults = append(defaults, d.Name+"="+d.Value)
	}
	for _, want := range []string{"use_pty=", "logfile=/var/log/sudo.log", "log_output="} {
		if !slices.Contains(defaults, want) {
			t.Errorf("defaults %v lack %s", defaults, want)
		}
	}
	// @include common-auth is expanded where it stands.
	var mods []string
	for _, r := range a.PAMSSHD {
		if r.Type == "auth" {
			mods = append(mods, r.Module)
		}
	}
	if want := []string{"pam_unix.so", "pam_deny.so", "pam_permit.so", "pam_google_authenticator.so"}; !slices.Equal(mods, want) {
		t.Errorf("sshd auth stack = %v, want %v", mods, want)
	}
	if len(a.EtcWritable) != 0 {
		t.Errorf("writable = %+v", a.EtcWritable)
	}
	golden(t, "hardened", a)
}

func TestWeakTree(t *testing.T) {
	root := copyTree(t, filepath.Join("testdata", "weak"))
	if err := os.WriteFile(filepath.Join(root, "etc/motd"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(root, "etc/motd"), 0o666); err != nil {
		t.Fatal(err)
	}
	audit := filepath.Join(root, "etc/gpuhost")
	if err := os.Mkdir(audit, 0o775); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(audit, 0o775); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(audit, -1, 1102); err != nil {
		t.Skipf("cannot give a file to another group here: %v", err)
	}
	a, err := gather(t, root)
	if err != nil {
		t.Fatal(err)
	}
	pw := map[string]string{}
	for _, u := range a.Users {
		pw[u.Name] = u.Password
	}
	if pw["guest"] != "empty" || pw["toor"] != "hash" {
		t.Errorf("passwords = %v", pw)
	}
	var nopasswdAll []string
	for _, r := range a.Sudo.Rules {
		if r.AllCommands && r.NoPasswd {
			nopasswdAll = append(nopasswdAll, strings.Join(r.Users, ","))
		}
	}
	if want := []string{"%sudo", "ubuntu"}; !slices.Equal(nopasswdAll, want) {
		t.Errorf("NOPASSWD ALL for %v, want %v (the #includedir is read)", nopasswdAll, want)
	}
	// PASSWD: after a command ends NOPASSWD's reach; here there was none.
	if r := a.Sudo.Rules[2]; r.NoPasswd || !slices.Equal(r.Commands, []string{"/usr/bin/journalctl", "/usr/bin/less"}) {
		t.Errorf("auditor rule = %+v", r)
	}
	got := map[string]facts.WritableFile{}
	for _, w := range a.EtcWritable {
		got[w.Path] = w
	}
	if w := got["/etc/motd"]; !w.WorldWritable || w.Mode != "-rw-rw-rw-" {
		t.Errorf("motd = %+v", w)
	}
	if w := got["/etc/gpuhost"]; !w.GroupWritable || w.Group != "gpuhost-audit" || w.GID != 1102 {
		t.Errorf("/etc/gpuhost = %+v", w)
	}
	golden(t, "weak", a)
}

func TestNoPasswdIsNotApplicable(t *testing.T) {
	_, err := gather(t, t.TempDir())
	if s, _ := collect.Classify(err); s != collect.StatusNotApplicable {
		t.Errorf("status %s (%v), want not_applicable", s, err)
	}
}

func TestBadInputNamesTheFile(t *testing.T) {
	base := map[string]string{"etc/passwd": "root:x:0:0:root:/root:/bin/bash\n", "etc/group": "root:x:0:\n"}
	for _, c := range []struct {
		file, body, want string
	}{
		{"etc/passwd", "root:x:0:0:root\n", "/etc/passwd line 1: 5 fields"},
		{"etc/passwd", "root:x:zero:0:root:/root:/bin/bash\n", "uid \"zero\""},
		{"etc/group", "wheel:x:\n", "/etc/group line 1"},
		{"etc/sudoers", "Defaults use_pty\nalice\n", "/etc/sudoers line 2"},
		{"etc/sudoers", "@include /etc/sudoers\n", "include loop"},
		{"etc/sudoers", "%a ALL = (root /bin/true\n", "unclosed run-as"},
		{"etc/pam.d/sshd", "auth required\n", "/etc/pam.d/sshd line 1"},
		{"etc/pam.d/sshd", "login required pam_unix.so\n", "unknown type \"login\""},
		{"etc/pam.d/sshd", "@include sshd\n", "nested deeper"},
	} {
		dir := t.TempDir()
		files := map[string]string{c.file: c.body}
		for k, v := range base {
			if _, ok := files[k]; !ok {
				files[k] = v
			}
		}
		for name, body := range files {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		_, err := gather(t, dir)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %q: error %v, want %q", c.file, c.body, err, c.want)
		}
	}
}

func TestSudoersSyntax(t *testing.T) {
	s, err := ParseSudoers("/etc/sudoers", []byte(strings.Join([]string{
		`Host_Alias GPU = gpu01, gpu02`,
		`Runas_Alias OP = root, operator`,
		`Defaults:alice !lecture, timestamp_timeout=0`,
		`Defaults>root !set_logname`,
		`alice, bob GPU = (OP) NOPASSWD: /usr/bin/nvidia-smi -r, PASSWD: /usr/bin/ls : ALL = /usr/bin/id`,
		`#1000 ALL=(ALL) ALL # a uid, then a comment`,
		`carol ALL=(ALL) CWD=* TIMEOUT=5m NOEXEC: ALL, !/usr/bin/su`,
	}, "\n")))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Rules) != 4 {
		t.Fatalf("rules = %+v", s.Rules)
	}
	r := s.Rules[0]
	if !slices.Equal(r.Users, []string{"alice", "bob"}) || !slices.Equal(r.Hosts, []string{"gpu01", "gpu02"}) ||
		!slices.Equal(r.RunAs, []string{"root", "operator"}) || !r.NoPasswd || r.AllCommands ||
		!slices.Equal(r.Commands, []string{"/usr/bin/nvidia-smi -r", "/usr/bin/ls"}) {
		t.Errorf("rule 0 = %+v", r)
	}
	if r := s.Rules[1]; !slices.Equal(r.Hosts, []string{"ALL"}) || !slices.Equal(r.Commands, []string{"/usr/bin/id"}) || r.NoPasswd {
		t.Errorf("rule 1 (the second host section) = %+v", r)
	}
	if r := s.Rules[2]; !slices.Equal(r.Users, []string{"#1000"}) || !r.AllCommands {
		t.Errorf("rule 2 = %+v", r)
	}
	if r := s.Rules[3]; !r.AllCommands || !slices.Equal(r.Commands, []string{"ALL", "!/usr/bin/su"}) {
		t.Errorf("rule 3 = %+v", r)
	}
	var scoped []string
	for _, d := range s.Defaults {
		scoped = append(scoped, d.Scope+" "+d.Name)
		if d.Name == "lecture" && !d.Negated {
			t.Errorf("!lecture not negated: %+v", d)
		}
	}
	if want := []string{":alice lecture", ":alice timestamp_timeout", ">root set_logname"}; !slices.Equal(scoped, want) {
		t.Errorf("defaults = %v, want %v", scoped, want)
	}
}

func FuzzParseSudoers(f *testing.F) {
	for _, s := range []string{
		"Defaults use_pty\nroot ALL=(ALL:ALL) ALL\n%admin ALL=(ALL) NOPASSWD: ALL\n",
		"User_Alias A = a, b\nCmnd_Alias C = /bin/x, /bin/y\nA ALL = (root) C : h = ALL\n",
		"Defaults:alice \"x\", !y\n#1000 ALL = ALL\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := ParseSudoers("fuzz", data)
		if err != nil {
			return
		}
		for _, r := range s.Rules {
			if r.AllCommands != slices.Contains(r.Commands, "ALL") || len(r.RunAs) == 0 {
				t.Fatalf("rule %+v from %q", r, data)
			}
		}
	})
}

func FuzzParsePAM(f *testing.F) {
	f.Add([]byte("@include common-auth\nauth [success=1 default=ignore] pam_unix.so nullok\n-session optional pam_systemd.so\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rules, err := ParsePAM("fuzz", data)
		if err != nil {
			return
		}
		for _, r := range rules {
			if r.Type == "" || r.Module == "" || r.Args == nil {
				t.Fatalf("rule %+v from %q", r, data)
			}
		}
	})
}

func FuzzParseAccounts(f *testing.F) {
	f.Add([]byte("root:x:0:0:root:/root:/bin/bash\n"), []byte("root:x:0:alice,bob\n"), []byte("root:*:1::::::\n"))
	f.Fuzz(func(t *testing.T, passwd, group, shadow []byte) {
		if users, err := ParsePasswd("passwd", passwd); err == nil {
			for _, u := range users {
				if u.UID < 0 || u.Password == "" {
					t.Fatalf("account %+v", u)
				}
			}
		}
		if groups, err := ParseGroup("group", group); err == nil {
			for _, g := range groups {
				if slices.Contains(g.Members, "") {
					t.Fatalf("group %+v", g)
				}
			}
		}
		_, _ = ParseShadow("shadow", shadow)
	})
}
