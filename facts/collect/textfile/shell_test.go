package textfile

import "testing"

// FuzzShell: whatever a shell-style file holds, expansion stays within its
// bound and every assignment has a name.
func FuzzShell(f *testing.F) {
	f.Add([]byte("ID=ubuntu\nPRETTY_NAME=\"Ubuntu \\\"x\\\"\"\nVERSION_ID='22.04'\n"))
	f.Add([]byte("export A=$B${C:-d}\nif [ x ]; then\nfi\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		vars := map[string]string{}
		if _, err := ParseShell(data, vars, true); err != nil {
			return
		}
		for k, v := range vars {
			if k == "" || len(v) > 2*maxShellValue {
				t.Errorf("var %q len %d", k, len(v))
			}
		}
	})
}
