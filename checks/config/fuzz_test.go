package config

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

func FuzzSSHD(f *testing.F) {
	f.Add([]byte("PermitRootLogin no\nCiphers +aes128-cbc\nMatch all\nPasswordAuthentication yes\n"))
	f.Add([]byte("Banner=\"a b\" # c\nKexAlgorithms -*sha1,^x\nInclude a b\n"))
	f.Add([]byte("x \"unterminated\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseSSHD(data)
		if err != nil {
			return
		}
		s := cfg.Facts("sshd_config")
		if s.PermitRootLogin == "" || s.PasswordAuthentication == "" || s.Ciphers == nil || s.MACs == nil || s.KexAlgorithms == nil {
			t.Fatalf("unfilled facts: %+v", s)
		}
	})
}

// FuzzContainerdTOML drives the decode, migrate, merge and extract steps over
// one file, used both as a main file and as a drop-in over a fixed base.
func FuzzContainerdTOML(f *testing.F) {
	f.Add([]byte("version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia.options]\nSystemdCgroup = true\n"))
	f.Add([]byte("version = 2\n[plugins.\"io.containerd.grpc.v1.cri\"]\nenable_cdi = true\n[plugins.\"io.containerd.grpc.v1.cri\".containerd]\ndefault_runtime_name = \"x\"\n"))
	f.Add([]byte("[plugins.cri.containerd.runtimes.runc]\noptions = 1\n"))
	f.Add([]byte("plugins = 3\n"))
	base := []byte("version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]\nSystemdCgroup = false\n")
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := DecodeContainerdTOML("fuzz.toml", data)
		if err != nil {
			return
		}
		for _, version := range []int{2, 3} {
			main, err := DecodeContainerdTOML("base.toml", base)
			if err != nil {
				t.Fatal(err)
			}
			merged := map[string]any{}
			if err := MergeTOML(merged, main.Tree); err != nil {
				t.Fatal(err)
			}
			MigrateContainerd(file.Tree, file.Version, version)
			if err := MergeTOML(merged, file.Tree); err != nil {
				continue
			}
			s, err := ExtractContainerd(merged, version)
			if err != nil {
				continue
			}
			if s.DefaultRuntime == "" {
				t.Fatal("empty default runtime")
			}
			if !s.NvidiaRuntime && (s.NvidiaSystemdCgroup != nil || s.NvidiaBinary != "") {
				t.Fatal("nvidia fields without an nvidia runtime")
			}
		}
	})
}
