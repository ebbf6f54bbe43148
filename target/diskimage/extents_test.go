package diskimage

import (
	"bytes"
	"crypto/rand"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// holey is n blocks of random bytes where every block whose index the
// pattern marks is zeros: mkfs.ext4 -d leaves each such block a hole.
func holey(t *testing.T, n int, hole func(int) bool) string {
	t.Helper()
	b := make([]byte, n*4096)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if hole(i) {
			clear(b[i*4096 : (i+1)*4096])
		}
	}
	return string(b)
}

// Files with holes, as mkfs.ext4 -d writes kernels and boot loaders, read
// back as written and as e2fsprogs' own debugfs reads them, in reads of
// any size: one hole, holes at the start and the end, so many that the
// extent tree needs index blocks, a file of zeros, and a tail that is no
// whole block.
func TestSparseFilesReadAsWritten(t *testing.T) {
	debugfs := testutil.Tool(t, "debugfs", "e2fsprogs")
	files := map[string]string{
		"boot/one-hole":    holey(t, 40, func(i int) bool { return i == 17 }),
		"boot/edges":       holey(t, 40, func(i int) bool { return i < 3 || i > 36 }),
		"boot/many-holes":  holey(t, 2000, func(i int) bool { return i%3 == 1 }),
		"boot/zeros":       strings.Repeat("\x00", 64<<10),
		"boot/ragged-tail": holey(t, 9, func(i int) bool { return i == 4 })[:9*4096-100] + "tail",
	}
	raw := ext4Of(t, osTree(t, "sparse", files), "64M", "-b", "4096")
	if out := testutil.Run(t, time.Minute, debugfs, "-R", "stat /boot/many-holes", raw); !strings.Contains(out, "ETB") {
		t.Fatalf("many-holes has no extent tree index block, so the test proves less than it says:\n%s", out)
	}
	img := mustRead(t, Options{}, raw, "sparse")
	defer img.Close()
	for name, want := range files {
		got, err := img.FS().ReadFileLimit(name, 64<<20)
		if err != nil || !bytes.Equal(got, []byte(want)) {
			t.Errorf("%s: read %d bytes (%v), want the %d written", name, len(got), err, len(want))
		}
		peer, err := exec.Command(debugfs, "-R", "cat /"+name, raw).Output()
		if err != nil || !bytes.Equal(peer, got) {
			t.Errorf("%s: debugfs cat gives %d bytes (%v), we read %d", name, len(peer), err, len(got))
		}
		for _, piece := range []int{1, 511, 4096, 4097, 65536} {
			rc, err := img.FS().Stream(name, 64<<20)
			if err != nil {
				t.Fatal(err)
			}
			var b bytes.Buffer
			if _, err := io.CopyBuffer(&b, struct{ io.Reader }{rc}, make([]byte, piece)); err != nil || !bytes.Equal(b.Bytes(), []byte(want)) {
				t.Errorf("%s in reads of %d: %d bytes (%v)", name, piece, b.Len(), err)
			}
			rc.Close()
		}
	}
	if err := img.Err(); err != nil {
		t.Errorf("reading sparse files damaged the image: %v", err)
	}
}
