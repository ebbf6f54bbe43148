package ssh

import (
	"testing"
)

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
