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

// eightGPUHosts are n live hosts of one image, each with eight GPUs of 18
// NVLinks: the gpu member differs on every host (UUIDs, temperatures) while
// the NVLink lists inside it repeat.
func eightGPUHosts(tb testing.TB, n int) [][]byte {
	tb.Helper()
	docs := make([][]byte, n)
	for h := range docs {
		f := fullFacts()
		f.GPU.Devices = nil
		for d := range 8 {
			temp := 30 + (h*8+d)%45
			dev := GPUDevice{Index: d, Name: "NVIDIA H100 80GB HBM3", TemperatureC: &temp,
				UUID:     fmt.Sprintf("GPU-%08x-0000-0000-0000-%012x", h, d),
				PCIBusID: fmt.Sprintf("00000000:%02X:00.0", 0x18+d*0x10),
				ECC:      &ECC{Current: true, Pending: true}, PCIe: &PCIe{GenCurrent: 5, GenMax: 5, WidthCurrent: 16, WidthMax: 16}}
			for l := range 18 {
				dev.NVLink = append(dev.NVLink, NVLink{Link: l, Active: true})
			}
			f.GPU.Devices = append(f.GPU.Devices, dev)
		}
		data, err := json.Marshal(f)
		if err != nil {
			tb.Fatal(err)
		}
		docs[h] = data
	}
	return docs
}

// BenchmarkDecodeFleet decodes a fleet of eight-GPU hosts, each unlike the
// last, with the member memo alone and with the nested memo beside it,
// which is what justifies the nested memo.
func BenchmarkDecodeFleet(b *testing.B) {
	v, err := schema()
	if err != nil {
		b.Fatal(err)
	}
	docs := eightGPUHosts(b, 2000)
	for _, nested := range []bool{false, true} {
		b.Run(map[bool]string{false: "members", true: "members+nested"}[nested], func(b *testing.B) {
			c := *v
			c.memo, c.nested = newMemberMemo(memoBytes), nil
			if nested {
				c.nested = newMemberMemo(memoBytes)
			}
			b.ReportAllocs()
			b.SetBytes(int64(len(docs[0])))
			i := 0
			for b.Loop() {
				if _, err := c.decode(docs[i%len(docs)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}
