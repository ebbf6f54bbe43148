package config

import (
	"slices"
	"strings"
	"testing"
)

func TestParseOpenSSLSyntax(t *testing.T) {
	cfg, err := ParseOpenSSL([]byte(`# comment
; also a comment
dir = /etc/ssl
openssl_conf = init
[ init ]
ssl_conf = ssl_sect   # trailing comment
path = $dir/certs
braced = ${dir}/x and $(ENV::HOME) stays
other = ${init::path}
quoted = "a # not a comment"  
escaped = a\#b\tc
long = one \
two
missing = $nosuch
[ssl_sect]
system_default = sys
[sys]
minprotocol = TLSv1.2
MinProtocol = TLSv1.3
MaxProtocol=TLSv1.3
.pragma dollarid:true
`))
	if err != nil {
		t.Fatal(err)
	}
	checks := map[string]string{
		"path":    "/etc/ssl/certs",
		"braced":  "/etc/ssl/x and $(ENV::HOME) stays",
		"other":   "/etc/ssl/certs",
		"quoted":  "a # not a comment",
		"escaped": "a#b\tc",
		"long":    "one two",
		"missing": "$nosuch",
	}
	for k, want := range checks {
		if got, _ := cfg.Get("init", k); got != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	if got, _ := cfg.Get("init", "ssl_conf"); got != "ssl_sect" {
		t.Errorf("ssl_conf = %q", got)
	}
	sd := cfg.SystemDefault()
	if sd.Section != "sys" || sd.MinProtocol != "TLSv1.3" || sd.MaxProtocol != "TLSv1.3" {
		t.Errorf("system default = %+v", sd)
	}
}

func TestParseOpenSSLExpansionBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("a = xxxxxxxxxxxxxxxx\n")
	prev := "a"
	for i := range 20 {
		name := "v" + strings.Repeat("x", i)
		b.WriteString(name + " = $" + prev + "$" + prev + "\n")
		prev = name
	}
	if _, err := ParseOpenSSL([]byte(b.String())); err == nil || !strings.Contains(err.Error(), "expansion") {
		t.Errorf("doubling expansion: %v, want a bound error", err)
	}
}

func TestLoadOpenSSLIncludeDir(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"/etc/ssl/openssl.cnf":          "openssl_conf = init\n.include conf.d\n",
		"/etc/ssl/conf.d/10-init.cnf":   "[init]\nssl_conf = ssl\n[ssl]\nsystem_default = sys\n",
		"/etc/ssl/conf.d/20-sys.conf":   "[sys]\nMinProtocol = TLSv1.3\n",
		"/etc/ssl/conf.d/30-ignored.md": "[sys]\nMinProtocol = TLSv1\n",
	})
	cfg, err := LoadOpenSSL(openFS(t, dir), OpenSSLConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if sd := cfg.SystemDefault(); sd.MinProtocol != "TLSv1.3" {
		t.Errorf("system default = %+v", sd)
	}
	if len(cfg.Files) != 3 {
		t.Errorf("files = %v", cfg.Files)
	}
}

func TestParseNginx(t *testing.T) {
	cfg, err := ParseNginx([]byte(`# top
http {
    ssl_protocols "TLSv1.2" 'TLSv1.3';
    add_header X-Test "a;b{c}" always;
    server { listen 443 ssl; return 200 'it\'s'; }
}
mail {
    server { listen 993 ssl; }
    server { listen 143; ssl on; }
    server { listen 25; }
}
stream {
    ssl_protocols TLSv1.3;
    server { listen 5000 ssl; }
}
`))
	if err != nil {
		t.Fatal(err)
	}
	http := cfg.Directives[0]
	if http.Name != "http" || !http.HasBlock || http.Line != 2 {
		t.Fatalf("http = %+v", http)
	}
	if got := http.Block[1].Args; !slices.Equal(got, []string{"X-Test", "a;b{c}", "always"}) {
		t.Errorf("add_header args = %q", got)
	}
	if got := http.Block[2].Block[1].Args; !slices.Equal(got, []string{"200", "it's"}) {
		t.Errorf("return args = %q", got)
	}
	settings := cfg.TLSSettings()
	var lines []int
	for _, s := range settings {
		lines = append(lines, s.Line)
	}
	// ssl_protocols at 3 and 13; defaults for mail servers at 8 and 9 only.
	if !slices.Equal(lines, []int{3, 13, 8, 9}) {
		t.Errorf("lines = %v, settings = %+v", lines, settings)
	}
	if !settings[2].Default || !slices.Equal(settings[2].Protocols, NginxDefaultProtocols) {
		t.Errorf("default entry = %+v", settings[2])
	}
}

func TestParseNginxErrors(t *testing.T) {
	for _, in := range []string{"http {", "}", "a b", "a \"b;", "a 'b'c;", "{ }", ";", "a { ; }"} {
		if _, err := ParseNginx([]byte(in)); err == nil {
			t.Errorf("%q parsed without error", in)
		}
	}
	deep := strings.Repeat("a {", 200) + strings.Repeat("}", 200)
	if _, err := ParseNginx([]byte(deep)); err == nil || !strings.Contains(err.Error(), "deeper") {
		t.Errorf("deep nesting: %v", err)
	}
}

func TestLoadNginxIncludeGlobRelative(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"/etc/nginx/nginx.conf":            "http { include sites/*.conf; }\n",
		"/etc/nginx/sites/b.conf":          "server { listen 443 ssl; }\n",
		"/etc/nginx/sites/a.conf":          "server {\n ssl_protocols TLSv1.3;\n listen 443 ssl;\n}\n",
		"/etc/nginx/sites/not-matched.txt": "garbage {",
	})
	fsys := openFS(t, dir)
	cfg, err := LoadNginx(fsys, NginxConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	settings := cfg.TLSSettings()
	if len(settings) != 2 || settings[0].File != fsys.Display("/etc/nginx/sites/a.conf") || settings[0].Line != 2 ||
		!settings[1].Default || settings[1].File != fsys.Display("/etc/nginx/sites/b.conf") || settings[1].Line != 1 {
		t.Errorf("settings = %+v", settings)
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
	dir := writeTree(t, map[string]string{
		"/etc/ssh/sshd_config":             "Include sshd_config.d/*.conf\nPasswordAuthentication no\n",
		"/etc/ssh/sshd_config.d/10-a.conf": "Match Group sftp\n  ForceCommand internal-sftp\n",
		"/etc/ssh/sshd_config.d/20-b.conf": "PermitRootLogin no\n",
	})
	cfg, err := LoadSSHD(openFS(t, dir), SSHDConfigPath)
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

func TestMergeTOMLRecursive(t *testing.T) {
	dst := map[string]any{"a": map[string]any{"x": int64(1), "y": int64(2)}, "s": "old"}
	src := map[string]any{"a": map[string]any{"y": int64(3), "z": int64(4)}, "s": "new"}
	if err := MergeTOML(dst, src); err != nil {
		t.Fatal(err)
	}
	a := dst["a"].(map[string]any)
	if a["x"] != int64(1) || a["y"] != int64(3) || a["z"] != int64(4) || dst["s"] != "new" {
		t.Errorf("merged = %v", dst)
	}
}

func TestDecodeContainerdTOMLVersion(t *testing.T) {
	for _, in := range []string{"version = 4", "version = \"2\"", "imports = \"x\"", "imports = [1]"} {
		if _, err := DecodeContainerdTOML("c.toml", []byte(in)); err == nil {
			t.Errorf("%q decoded without error", in)
		}
	}
}
