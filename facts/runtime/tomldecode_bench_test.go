package runtime

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// manyKeys is a containerd import of keys keys, one a line, the shape of the
// hostile import of issue 33 (220,000 keys in 2 MiB).
func manyKeys(keys int) []byte {
	var b strings.Builder
	b.WriteString("version = 2\n")
	for i := range keys {
		fmt.Fprintf(&b, "k%x=1\n", i)
	}
	return []byte(b.String())
}

// BenchmarkContainerdImport is what LoadContainerd does with one import:
// decode its values and lines and merge both. The time per key must stay
// flat as the keys double. The limit is lifted to measure the decoder
// past it.
func BenchmarkContainerdImport(b *testing.B) {
	for _, keys := range []int{55_000, 110_000, 220_000, 440_000} {
		data := manyKeys(keys)
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				doc, err := decodeTOML("import.toml", data, 0, math.MaxInt)
				if err != nil {
					b.Fatal(err)
				}
				if err := MergeTOML(map[string]any{}, doc.Values); err != nil {
					b.Fatal(err)
				}
				if err := MergeTOML(map[string]any{}, doc.Lines); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
