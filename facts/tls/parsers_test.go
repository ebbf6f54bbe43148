package tls

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
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
	dir := collecttest.TempTree(t, map[string]string{
		"/etc/ssl/openssl.cnf":          "openssl_conf = init\n.include conf.d\n",
		"/etc/ssl/conf.d/10-init.cnf":   "[init]\nssl_conf = ssl\n[ssl]\nsystem_default = sys\n",
		"/etc/ssl/conf.d/20-sys.conf":   "[sys]\nMinProtocol = TLSv1.3\n",
		"/etc/ssl/conf.d/30-ignored.md": "[sys]\nMinProtocol = TLSv1\n",
	})
	cfg, err := LoadOpenSSL(collecttest.OpenFS(t, dir), OpenSSLConfigPath)
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
	dir := collecttest.TempTree(t, map[string]string{
		"/etc/nginx/nginx.conf":            "http { include sites/*.conf; }\n",
		"/etc/nginx/sites/b.conf":          "server { listen 443 ssl; }\n",
		"/etc/nginx/sites/a.conf":          "server {\n ssl_protocols TLSv1.3;\n listen 443 ssl;\n}\n",
		"/etc/nginx/sites/not-matched.txt": "garbage {",
	})
	fsys := collecttest.OpenFS(t, dir)
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

func TestNginxCommandLine(t *testing.T) {
	for argv, want := range map[string]string{
		"/usr/sbin/nginx -c /x.conf -g daemon": "/x.conf",
		"nginx -p /srv/ -c conf/n.conf":        "/srv/conf/n.conf",
		"nginx -cn.conf":                       "/usr/share/nginx/n.conf",
		"nginx -g daemon":                      NginxConfigPath,
	} {
		if got, err := NginxCommandLine(strings.Fields(argv)); err != nil || got != want {
			t.Errorf("nginx %q: %q %v, want %q", argv, got, err, want)
		}
	}
}

func TestNginxServerNames(t *testing.T) {
	cfg, err := ParseNginx([]byte(`
http {
  server { listen 80; server_name plain.example; }
  server {
    listen 443 ssl; listen [::]:8443 ssl http2;
    server_name api.example .svc.example *.wild.example ~^re\.example$ _ $hostname API2.Example;
  }
  server { listen 10.0.0.5 ; ssl on; server_name old.example; }
  server { listen unix:/run/x.sock ssl; server_name sock.example; }
}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range cfg.ServerNames() {
		got = append(got, fmt.Sprintf("%s:%d@%d", n.Name, n.Port, n.Line))
	}
	want := []string{"api.example:443@6", "api.example:8443@6", "svc.example:443@6", "svc.example:8443@6",
		"api2.example:443@6", "api2.example:8443@6", "old.example:80@8"}
	if !slices.Equal(got, want) {
		t.Errorf("server names %q, want %q", got, want)
	}
}
