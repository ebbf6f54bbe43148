package rootfs

import (
	"strings"
	"testing"
)

// FuzzAptSources feeds both apt source formats the same text: parsing must
// not panic, and every source found is a deb entry with a URI and no blanks.
func FuzzAptSources(f *testing.F) {
	f.Add([]byte(debianSources))
	f.Add([]byte("deb [arch=amd64 signed-by=/k.gpg] http://one.test/debian bookworm main\n"))
	f.Add([]byte("Types: deb\nURIs:\n http://cont.test/debian\n\thttp://two.test/debian\nSuites: bookworm\nEnabled: no\n"))
	f.Add([]byte("deb [broken http://x bookworm\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, s := range append(parseDeb822Sources(data), parseOneLineSources(data)...) {
			if s.uri == "" || strings.ContainsAny(s.uri, " \t\n") {
				t.Fatalf("bad uri %q", s.uri)
			}
			for _, su := range s.suites {
				if su == "" || strings.ContainsAny(su, " \t\n") {
					t.Fatalf("bad suite %q", su)
				}
			}
		}
	})
}

// FuzzUnescapeMountinfo checks the octal unescaping never panics and never
// grows a path.
func FuzzUnescapeMountinfo(f *testing.F) {
	for _, s := range []string{`/a\040b`, `\`, `\04`, `\0400`, `/x\134y`, `\777`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got := unescapeMountinfo(s); len(got) > len(s) {
			t.Fatalf("unescape(%q) = %q is longer", s, got)
		}
	})
}
