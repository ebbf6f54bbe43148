package osinfo

import "testing"

func FuzzOSRelease(f *testing.F) {
	f.Add([]byte("ID=ubuntu\nPRETTY_NAME=\"Ubuntu \\\"x\\\"\"\nVERSION_ID='22.04'\n"))
	f.Add([]byte("export A=$B${C:-d}\nif [ x ]; then\nfi\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, _ = parseOSRelease(data)
	})
}
