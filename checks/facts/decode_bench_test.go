package facts

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// benchDocuments are the two sizes `scan facts` meets: the example document
// (about 7 KB, a dozen packages) and a host with a full 1,500-package
// inventory (about 180 KB), the shape of a real GPU image.
func benchDocuments(tb testing.TB) map[string][]byte {
	tb.Helper()
	small, err := os.ReadFile(filepath.Join("testdata", "good-full.json"))
	if err != nil {
		tb.Fatal(err)
	}
	large, err := json.Marshal(withPackages(fullFacts(), 1500))
	if err != nil {
		tb.Fatal(err)
	}
	return map[string][]byte{"7KB": small, "180KB": large}
}

// withPackages gives f n packages named and versioned like a Debian image's.
func withPackages(f *Facts, n int) *Facts {
	f.Packages = make([]Package, n)
	for i := range f.Packages {
		f.Packages[i] = Package{
			Name:    fmt.Sprintf("libexample%04d-%d", i, i%7),
			Version: fmt.Sprintf("%d.%d.%d-%dubuntu%d", i%5, i%13, i%31, i%3+1, i%4),
			Arch:    []string{"amd64", "all"}[i%2],
			Held:    i%97 == 0,
		}
	}
	return f
}

// BenchmarkDecodeJSON is what every saved document costs before any policy
// runs: parse it and validate it against the schema. "reference" is the
// plain path (encoding/json's parse, the whole schema), "cold" the member
// by member path meeting every member for the first time, "warm" the same
// with every member already in the memo, as for hosts baked from one image.
func BenchmarkDecodeJSON(b *testing.B) {
	v, err := schema()
	if err != nil {
		b.Fatal(err)
	}
	cold := *v
	cold.memo = nil
	docs := benchDocuments(b)
	for _, name := range []string{"7KB", "180KB"} {
		data := docs[name]
		for _, path := range []struct {
			name   string
			decode func([]byte) (any, error)
		}{
			{"reference", v.decodeWhole},
			{"cold", cold.decode},
			{"warm", v.decode},
		} {
			b.Run(name+"/"+path.name, func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					if _, err := path.decode(data); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
