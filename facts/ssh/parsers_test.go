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

// What TestSSHDConfigDifferential found sshd -T to say otherwise (issue
// 48), one case each: a Match all block applies to every connection, over
// the global settings and the command line; times are seconds; every
// MaxStartups line counts, each over the last; quiet is SILENT; and
// Debian 12's openssh-server offers sntrup761x25519-sha512 by that name
// from 1:9.2p1-2+deb12u4.
func TestSSHDReadAsSSHDTPrints(t *testing.T) {
	src := collecttest.OpenFS(t, collecttest.TempTree(t, map[string]string{
		"/etc/ssh/sshd_config": "PasswordAuthentication yes\nClientAliveInterval 5m\nLoginGraceTime 1m30s\nMaxStartups 3:50:10\nMaxStartups 20\nLogLevel quiet\n" +
			"Match User alice\n  X11Forwarding yes\nMatch all\n  PasswordAuthentication no\n  DenyUsers guest\n  MaxSessions 2\nMatch all\n  PasswordAuthentication yes\n  DenyUsers nobody\n",
	}))
	cfg, err := LoadSSHDWith(src, "/etc/ssh/sshd_config", []string{"MaxSessions=4"})
	if err != nil {
		t.Fatal(err)
	}
	s := cfg.Settings("/etc/ssh/sshd_config")
	if s.PasswordAuthentication != "no" || !slices.Equal(s.DenyUsers, []string{"guest", "nobody"}) || s.Options["maxsessions"] != "2" || s.Options["x11forwarding"] != "no" {
		t.Errorf("Match all: password %q deny %v maxsessions %q x11 %q; want no, guest and nobody, 2, no",
			s.PasswordAuthentication, s.DenyUsers, s.Options["maxsessions"], s.Options["x11forwarding"])
	}
	if at := s.Locations["passwordauthentication"]; at.Line != 10 {
		t.Errorf("passwordauthentication is set at %+v, want the Match all line 10", at)
	}
	if len(s.Match) != 3 {
		t.Errorf("Match blocks %+v, want all three kept", s.Match)
	}
	for k, want := range map[string]string{"clientaliveinterval": "300", "logingracetime": "90", "maxstartups": "20:50:20", "loglevel": "SILENT"} {
		if s.Options[k] != want {
			t.Errorf("%s = %q, want %q as sshd -T prints it", k, s.Options[k], want)
		}
	}
	for _, tc := range []struct {
		version string
		alias   bool
	}{{"", false}, {"1:8.9p1-3ubuntu0.10", false}, {"1:9.2p1-2+deb12u3", false}, {"1:9.2p1-2+deb12u4", true}, {"1:9.2p1-2+deb12u10", true}} {
		if got := slices.Contains(KexDefaultsFor(tc.version), "sntrup761x25519-sha512"); got != tc.alias {
			t.Errorf("KexDefaultsFor(%q) offers sntrup761x25519-sha512: %v, want %v", tc.version, got, tc.alias)
		}
	}
	for v, want := range map[string]int{"0": 0, "300": 300, "5m": 300, "1h30s": 3630, "2W": 1209600, "1d1": 86401} {
		if got, ok := sshdSeconds(v); !ok || got != want {
			t.Errorf("sshdSeconds(%q) = %d, %v; want %d", v, got, ok, want)
		}
	}
	for _, bad := range []string{"", "m", "5x", "-1", "99999999999"} {
		if _, ok := sshdSeconds(bad); ok {
			t.Errorf("sshdSeconds(%q) read a time", bad)
		}
	}
}
