package treedigest

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkDigest walks a tree shaped like a rootfs's /usr: many small
// files a few directories deep, where the walk's cost is per entry (stat,
// open, extended attributes) more than per byte.
func BenchmarkDigest(b *testing.B) {
	dir := b.TempDir()
	var files int
	var bytes int64
	for i := range 40 {
		d := filepath.Join(dir, "usr", "lib", fmt.Sprintf("pkg%02d", i), "sub", "dir")
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
		for j := range 50 {
			body := make([]byte, 1024*(j%8+1))
			for k := range body {
				body[k] = byte(i + j + k)
			}
			if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%03d.so", j)), body, 0o644); err != nil {
				b.Fatal(err)
			}
			files++
			bytes += int64(len(body))
		}
		if err := os.Symlink("sub/dir/f000.so", filepath.Join(d, "..", "..", "link")); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(bytes)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := Digest(dir, Options{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*files), "ns/file")
}
