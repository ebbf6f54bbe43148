package system

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

func FuzzDpkgStatus(f *testing.F) {
	f.Add([]byte(ubuntuDpkg))
	f.Add([]byte("Package: a\nStatus: hold ok installed\nVersion: 1\n"))
	f.Add([]byte(" x\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		pkgs, err := ParseDpkgStatus(data)
		if err != nil {
			if !strings.Contains(err.Error(), "line ") {
				t.Errorf("error without a line: %v", err)
			}
			return
		}
		for i, p := range pkgs {
			if p.Name == "" || p.Version == "" {
				t.Errorf("empty name or version: %+v", p)
			}
			if i > 0 && pkgs[i-1].Name > p.Name {
				t.Errorf("not sorted at %d", i)
			}
		}
	})
}

func FuzzCrypttab(f *testing.F) {
	f.Add([]byte("cryptroot UUID=1 none luks,discard\n# c\n"))
	f.Add([]byte("a b c d e\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ct, err := parseCrypttab(data)
		if err != nil {
			return
		}
		for _, e := range ct {
			if e.Name == "" || e.Device == "" || e.Options == nil {
				t.Errorf("bad entry %+v", e)
			}
		}
	})
}

func FuzzFstab(f *testing.F) {
	f.Add([]byte("LABEL=root / ext4 defaults 0 1\n/swap\\040f none swap sw 0 0\n"))
	f.Add([]byte("/dev/a /\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := parseFstab(data)
		if err != nil {
			return
		}
		if len(entries) > maxTableEntries {
			t.Errorf("%d entries", len(entries))
		}
		_ = unescapeOctal(string(data))
	})
}

func FuzzProcNet(f *testing.F) {
	f.Add([]byte(procTCP))
	f.Add([]byte(procTCP6))
	f.Add([]byte(procUDP))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, state := range []string{"0A", "07"} {
			socks, err := parseProcNet(data, "tcp", state)
			if err != nil {
				continue
			}
			for _, s := range socks {
				if !s.Addr.IsValid() {
					t.Errorf("invalid address in %+v", s)
				}
			}
		}
	})
}

func FuzzNftables(f *testing.F) {
	f.Add([]byte("table inet filter { chain input { type filter hook input priority 0; policy drop; tcp dport { 22, 443 } accept } }\n"))
	f.Add([]byte("define P = 22\nadd chain inet f input { type filter hook input priority 0 ; }\nadd rule inet f input tcp dport $P accept\n"))
	f.Add([]byte("include \"x\"\n{{}}\n"))
	f.Add([]byte("table inet f { set s { type inet_service; elements = { 1-3 } }\n chain c { tcp dport @s accept; return }\n chain i { type filter hook input priority 0; policy drop; jump c; goto c } }\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := parseNftVerdict(data)
		if err != nil {
			return
		}
		if v.policy == "" {
			t.Error("empty policy")
		}
		for i, p := range v.ports {
			if p < 0 || p > 65535 || (i > 0 && v.ports[i-1] >= p) {
				t.Errorf("bad port list %v", v.ports)
				break
			}
		}
		// Every port a rule admits is in the list; the rest of what is
		// admitted must come from an accepting policy.
		for _, a := range v.admits {
			if a.From > a.To || (a.Proto != "tcp" && a.Proto != "udp") {
				t.Fatalf("bad admit %+v", a)
			}
			if strings.HasPrefix(a.Rule, "policy accept") {
				if v.policy != "accept" {
					t.Errorf("admitted by policy %+v under policy %q", a, v.policy)
				}
				continue
			}
			if !slices.Contains(v.ports, a.From) || !slices.Contains(v.ports, a.To) {
				t.Errorf("admit %+v outside ports", a)
			}
		}
		for _, u := range v.unknown {
			if u.Rule == "" || u.Reason == "" {
				t.Errorf("unmodeled rule without a name or reason: %+v", u)
			}
		}
	})
}

func FuzzOSRelease(f *testing.F) {
	f.Add([]byte("ID=ubuntu\nPRETTY_NAME=\"Ubuntu \\\"x\\\"\"\nVERSION_ID='22.04'\n"))
	f.Add([]byte("export A=$B${C:-d}\nif [ x ]; then\nfi\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = parseOSRelease(data)
		vars := map[string]string{}
		if _, err := parseShell(data, vars, true); err != nil {
			return
		}
		for k, v := range vars {
			if k == "" || len(v) > 2*maxShellValue {
				t.Errorf("var %q len %d", k, len(v))
			}
		}
	})
}

func FuzzUfwRules(f *testing.F) {
	f.Add([]byte("### tuple ### allow tcp 22 0.0.0.0/0 any 0.0.0.0/0 in\n-A ufw-user-input -p tcp --dport 22 -j ACCEPT\n"))
	f.Add([]byte("### tuple ### allow udp 1:65535 0.0.0.0/0 any 0.0.0.0/0 in\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		var ps portSet
		if err := parseUfwRules(data, &ps); err != nil {
			return
		}
		if n := len(ps.list()); n > 65536 {
			t.Errorf("%d ports", n)
		}
	})
}

func FuzzLUKSHeader(f *testing.F) {
	v1 := make([]byte, luks1HeaderSize)
	copy(v1, luksMagic)
	v1[7] = 1
	copy(v1[8:], "aes")
	copy(v1[40:], "xts-plain64")
	v1[111] = 64
	f.Add(v1)
	v2 := make([]byte, 16<<10)
	copy(v2, luksMagic)
	v2[7] = 2
	v2[14] = 0x40 // hdr_size 16 KiB
	copy(v2[4096:], `{"keyslots":{"0":{"key_size":64}},"segments":{"0":{"type":"crypt","encryption":"aes-xts-plain64"}},"digests":{"0":{"keyslots":["0"],"segments":["0"]}}}`)
	f.Add(v2)
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := readLUKSHeader(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		if h.Version != 1 && h.Version != 2 || h.Cipher == "" || h.KeyBits <= 0 || h.KeyBits > 8192 {
			t.Errorf("accepted %+v", h)
		}
	})
}

func FuzzLVMMetadata(f *testing.F) {
	f.Add([]byte(ubuntuVG("/dev/mapper/dm_crypt-0")))
	f.Add([]byte("vg { logical_volumes { lv { segment1 { stripes = [\"pv0\", 0] } } } }"))
	f.Fuzz(func(t *testing.T, data []byte) {
		vg, err := parseLVMMetadata(data)
		if err != nil {
			if !strings.Contains(err.Error(), "line ") && !strings.Contains(err.Error(), "volume") {
				t.Errorf("error without a place: %v", err)
			}
			return
		}
		if vg.Name == "" {
			t.Error("volume group without a name")
		}
		for name, lv := range vg.LVs {
			if len(lv.PVs) == 0 && len(lv.On) == 0 {
				t.Errorf("LV %s lies nowhere", name)
			}
			for _, k := range lv.PVs {
				if _, ok := vg.PVs[k]; !ok {
					t.Errorf("LV %s on unknown PV %s", name, k)
				}
			}
		}
	})
}
