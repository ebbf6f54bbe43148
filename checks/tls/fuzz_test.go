package tls

import (
	"strings"
	"testing"
)

func FuzzOpenSSL(f *testing.F) {
	f.Add([]byte("openssl_conf = i\n[i]\nssl_conf = s\n[s]\nsystem_default = d\n[d]\nMinProtocol = TLSv1.3\n"))
	f.Add([]byte("a = $b ${c::d} $(e) \"q\\\"\" 'x' \\\n continued # c\n.include = x\n[ s ]\n"))
	f.Add([]byte("[unterminated\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseOpenSSL(data)
		if err != nil {
			return
		}
		sd := cfg.SystemDefault()
		if sd.Section == "" && (sd.MinProtocol != "" || sd.MaxProtocol != "") {
			t.Fatalf("protocols without a system_default section: %+v", sd)
		}
		for _, entries := range cfg.Sections {
			for _, e := range entries {
				if len(e.Value) > maxOpenSSLValue {
					t.Fatalf("value of %d bytes escaped the bound", len(e.Value))
				}
			}
		}
	})
}

func FuzzNginx(f *testing.F) {
	f.Add([]byte("http { ssl_protocols TLSv1.3; server { listen 443 ssl; } }\n"))
	f.Add([]byte("a \"b\\\"c\" 'd' e\\ f; # c\nstream { server { ssl on; } }"))
	f.Add([]byte("http {"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseNginx(data)
		if err != nil {
			return
		}
		for _, s := range cfg.TLSSettings() {
			if s.Line < 1 || s.Line > 1+strings.Count(string(data), "\n") {
				t.Fatalf("line %d outside the input", s.Line)
			}
		}
	})
}
