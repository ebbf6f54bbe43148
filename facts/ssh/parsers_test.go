package ssh

import (
	"slices"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

func TestSSHDMatchBlocks(t *testing.T) {
	src := collecttest.OpenFS(t, collecttest.TempTree(t, map[string]string{
		"/etc/ssh/sshd_config":          "PasswordAuthentication no\nInclude sshd_config.d/*.conf\nMatch Address 10.0.0.0/8\n  PermitRootLogin yes\n  Include match.d/x.conf\nPermitEmptyPasswords yes\n",
		"/etc/ssh/sshd_config.d/a.conf": "KbdInteractiveAuthentication no\nMatch User x\nPasswordAuthentication yes\n",
		"/etc/ssh/match.d/x.conf":       "ChallengeResponseAuthentication yes\n",
	}))
	cfg, err := LoadSSHDWith(src, "/etc/ssh/sshd_config", []string{"PermitRootLogin=no"})
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Settings("/etc/ssh/sshd_config")
	if s.PasswordAuthentication != "no" || s.KbdInteractiveAuthentication != "no" || s.PermitRootLogin != "no" || s.PermitEmptyPasswords != "no" {
		t.Errorf("global settings %+v: a Match block or a Match opened in an include leaked out", s)
	}
	want := []facts.SSHMatch{
		{File: "/etc/ssh/sshd_config.d/a.conf", Line: 2, Criteria: "User x", Settings: []facts.SSHSetting{
			{Keyword: "passwordauthentication", Value: "yes", File: "/etc/ssh/sshd_config.d/a.conf", Line: 3},
		}},
		{File: "/etc/ssh/sshd_config", Line: 3, Criteria: "Address 10.0.0.0/8", Settings: []facts.SSHSetting{
			{Keyword: "permitrootlogin", Value: "yes", File: "/etc/ssh/sshd_config", Line: 4},
			{Keyword: "kbdinteractiveauthentication", Value: "yes", File: "/etc/ssh/match.d/x.conf", Line: 1},
			{Keyword: "permitemptypasswords", Value: "yes", File: "/etc/ssh/sshd_config", Line: 6},
		}},
	}
	if len(s.Match) != len(want) {
		t.Fatalf("match = %+v", s.Match)
	}
	for i := range want {
		if s.Match[i].File != want[i].File || s.Match[i].Line != want[i].Line || s.Match[i].Criteria != want[i].Criteria || !slices.Equal(s.Match[i].Settings, want[i].Settings) {
			t.Errorf("match[%d] = %+v, want %+v", i, s.Match[i], want[i])
		}
	}
}

func TestParseSSHD(t *testing.T) {
	cfg, err := ParseSSHD([]byte(`# comment
permitrootlogin=without-password
PermitRootLogin yes
PasswordAuthentication = No
ChallengeResponseAuthentication yes
KbdInteractiveAuthentication no
Banner "/etc/my banner" # comment
Ciphers -*-cbc,aes128*
Match User backup
    PermitEmptyPasswords yes
    MACs hmac-md5
`))
	if err != nil {
		t.Fatal(err)
	}
	f := cfg.Facts("sshd_config")
	if f.PermitRootLogin != "prohibit-password" || f.PasswordAuthentication != "no" ||
		f.KbdInteractiveAuthentication != "yes" || f.PermitEmptyPasswords != "no" {
		t.Errorf("facts = %+v", f)
	}
	if got := cfg.Values["banner"]; !slices.Equal(got, []string{"/etc/my banner"}) {
		t.Errorf("banner = %q", got)
	}
	want := []string{"chacha20-poly1305@openssh.com", "aes192-ctr", "aes256-ctr", "aes256-gcm@openssh.com"}
	if !slices.Equal(f.Ciphers, want) {
		t.Errorf("ciphers = %v, want %v", f.Ciphers, want)
	}
	if !slices.Equal(f.MACs, DefaultSSHMACs) || slices.Contains(f.Explicit, "macs") || slices.Contains(f.Explicit, "permitemptypasswords") {
		t.Errorf("Match block leaked: macs %v explicit %v", f.MACs, f.Explicit)
	}
}

func TestLoadSSHDMatchEndsWithIncludedFile(t *testing.T) {
	dir := collecttest.TempTree(t, map[string]string{
		"/etc/ssh/sshd_config":             "Include sshd_config.d/*.conf\nPasswordAuthentication no\n",
		"/etc/ssh/sshd_config.d/10-a.conf": "Match Group sftp\n  ForceCommand internal-sftp\n",
		"/etc/ssh/sshd_config.d/20-b.conf": "PermitRootLogin no\n",
	})
	cfg, err := LoadSSHD(collecttest.OpenFS(t, dir), SSHDConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	f := cfg.Facts("x")
	if f.PermitRootLogin != "no" || f.PasswordAuthentication != "no" || len(f.Files) != 3 {
		t.Errorf("facts = %+v", f)
	}
}

func TestAssembleAlgorithms(t *testing.T) {
	def := []string{"a", "b", "c-cbc"}
	cases := map[string][]string{
		"x,y":     {"x", "y"},
		"+x,a":    {"a", "b", "c-cbc", "x"},
		"^x":      {"x", "a", "b", "c-cbc"},
		"-*-cbc":  {"a", "b"},
		"-*":      {},
		"x,,y, z": {"x", "y", "z"},
	}
	for spec, want := range cases {
		if got := AssembleAlgorithms(spec, def); !slices.Equal(got, want) {
			t.Errorf("%q: %v, want %v", spec, got, want)
		}
	}
}

func TestSSHDCommandLine(t *testing.T) {
	file, opts, err := SSHDCommandLine([]string{"/usr/sbin/sshd", "-Def/tmp/y", "-oPasswordAuthentication=yes", "-p", "22"})
	if err != nil || file != "/tmp/y" || !slices.Equal(opts, []string{"PasswordAuthentication=yes"}) {
		t.Errorf("sshd: %q %q %v", file, opts, err)
	}
	if file, _, _ := SSHDCommandLine([]string{"/usr/sbin/sshd", "-D"}); file != SSHDConfigPath {
		t.Errorf("sshd default config %q", file)
	}
	if _, _, err := SSHDCommandLine([]string{"sshd", "-f"}); err == nil {
		t.Error("sshd -f without a file accepted")
	}
}
