package runtime

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"

	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
)

// tomlLines is a document's line tree alone, as the tests of lines read it.
func tomlLines(display string, data []byte) (map[string]any, error) {
	doc, err := decodeTOML(display, data, 0, math.MaxInt)
	if err != nil {
		return nil, err
	}
	return doc.Lines, nil
}

// tomlCorners are documents on each side of go-toml's rules for keys:
// redefinitions, dotted keys against headers, arrays of tables, inline tables,
// and the scalars whose conversion is go-toml's.
var tomlCorners = []string{
	"a = 1\na = 2\n",
	"[a]\n[a]\n",
	"[a.b]\n[a]\nx = 1\n",
	"[a]\nb.c = 1\n[a.b]\n",
	"a.b = 1\n[a.c]\nx = 1\n",
	"a.b = 1\n[a]\n",
	"[[a]]\nx = 1\n[[a]]\nx = 2\n",
	"[[a]]\n[a.b]\nx = 1\n[[a]]\n[a.b]\ny = 1\n",
	"[[a]]\n[a.b]\n[a.b]\n",
	"[[a]]\nb.c = 1\n[[a]]\nb.c = 2\n",
	"[[a.b]]\n[a]\nx = 1\n",
	"[[a]]\n[[a.b]]\nx = 1\n[[a.b]]\nx = 2\n[[a]]\n[[a.b]]\n",
	"a = [1]\n[[a]]\n",
	"[a]\n[[a]]\n",
	"[[a]]\n[a]\n",
	"a = 1\n[a.b]\n",
	"a = 1\n[[a.b]]\n",
	"a = {b = 1}\n[a.c]\n",
	"a = {b = 1}\n[a]\n",
	"a = {b = 1, b = 2}\n",
	"a = {b.c = 1, b.d = 2}\n",
	"a = {b.c = 1, b = 2}\n",
	"a = {b = 1, b.c = 2}\n",
	"a = {b = {c = 1}, b.d = 2}\n",
	"a = [{b = 1, b = 2}]\n",
	"a = [[{b = 1, b = 1}]]\n",
	"a = [{b = 1}, {b = 1}]\n",
	"a = {\n  b = 1,\n  b = 2 }\n",
	"a.b = 1\na.b.c = 2\n",
	"a.b = 1\na.c = 2\n",
	"[t]\na.b = 1\n[t.a]\n",
	"[t]\na.b = 1\n[t.a.c]\n",
	"[a.b.c]\n[a]\nb.d = 1\n",
	"[a]\n[a.b]\n[a.b.c]\n[a.b]\n",
	"x = 0x7fffffffffffffff\ny = 0x8000000000000000\n",
	"x = 9223372036854775807\n",
	"x = 9223372036854775808\n",
	"x = -9223372036854775808\ny = -9223372036854775809\n",
	"x = 999999999999999999\ny = 1_000\nz = +5\nw = 0o17\nv = 0b101\nu = 0xDEAD_beef\n",
	"x = 1e1000\ny = 1.5e-3\nz = -0.0\n",
	"x = nan\ny = -inf\nz = +nan\n",
	"d = 1979-05-27T07:32:00Z\nl = 1979-05-27T07:32:00\nld = 1979-05-27\nlt = 07:32:00.999\no = 1979-05-27 07:32:00-07:00\n",
	"d = 1979-13-27\n",
	"d = 1979-05-27T25:32:00\n",
	"t = 07:32:61\n",
	"a = [\n1,\n99999999999999999999]\n",
	"s = \"\\u0041\\t\"\nm = '''\nx'''\nb = \"\"\"\nline \\\n  next\"\"\"\n",
	"[\"a.b\".c]\n'd' = 1\n\"\" = 2\n",
	"a = []\nb = [[], [1, 'x'], {}]\n",
	"a = [\n  1, # one\n  2,\n]\n",
	"[a]\nx = 1\n[b]\n[a.c]\ny = 2\n",
	"x = \"unterminated\n",
	"x = 1 2\n",
	"= 1\n",
	"x = 20s\n",
	"x = true\ny = false\nz = tru\n",
	"a = 1\r\nb = 2\r\n[t]\r\nc = { d = 3 }\r\n",
	"a = 1\rb = 2\n",
	"[a\n",
	"[[a]\n",
	"a = {b = 1,}\n",
	"a = 1 # comment\n# only\n",
	"\"\\u0000header\" = 1\n[\"\\u0000header\"]\n",
	"[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia.options]\nBinaryName = '/usr/bin/nvidia-container-runtime'\nSystemdCgroup = true\n",
	strings.Repeat("[", 1) + strings.Repeat("a.", 70) + "a]\n",
	// Too deep for the line tree, and wrong: go-toml's error comes first.
	"[" + strings.Repeat("a.", 70) + "a]\nx\n",
	"a = " + strings.Repeat("[", 80) + strings.Repeat("]", 80) + "\n",
	"a = " + strings.Repeat("{b = ", 80) + "1" + strings.Repeat("}", 80) + "\n",
}

// FuzzDecodeTOML holds decodeTOML to toml.Unmarshal, which it replaces: the
// same documents decode, to the same values, and the same fail, with the
// same error at the same line. The one difference allowed is the line tree's
// own bound on nesting.
func FuzzDecodeTOML(f *testing.F) {
	for _, doc := range tomlCorners {
		f.Add([]byte(doc))
	}
	err := filepath.WalkDir("testdata", func(p string, e fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".toml") {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			f.Add(data)
		}
		return err
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		want := map[string]any{}
		wantErr := toml.Unmarshal(data, &want)
		doc, err := decodeTOML("f.toml", data, 0, math.MaxInt)
		switch {
		case wantErr == nil && err != nil:
			if !strings.Contains(err.Error(), "nested deeper than") {
				t.Fatalf("go-toml decodes %q, decodeTOML: %v", data, err)
			}
		case wantErr != nil && err == nil:
			t.Fatalf("go-toml refuses %q (%v), decodeTOML decodes it", data, wantErr)
		case wantErr != nil:
			var de *toml.DecodeError
			if !errors.As(wantErr, &de) {
				t.Fatalf("go-toml refuses %q without a position: %v", data, wantErr)
			}
			row, _ := de.Position()
			if w := fmt.Sprintf("parsing f.toml:%d: %s", row, de.Error()); err.Error() != w {
				t.Fatalf("%q:\n got %v\nwant %s", data, err, w)
			}
		default:
			// %#v compares NaN as equal and times by their zone's offset.
			if got, w := fmt.Sprintf("%#v", doc.Values), fmt.Sprintf("%#v", want); got != w {
				t.Fatalf("%q:\n got %s\nwant %s", data, got, w)
			}
		}
	})
}

// TestContainerdValueLimit: a configuration holds MaxContainerdValues key
// parts and array elements at most, its imports counted with it; the file
// that passes the limit is named, at the line where it does.
func TestContainerdValueLimit(t *testing.T) {
	// version, imports and its one element.
	const mainValues = 3
	main := "version = 3\nimports = [\"conf.d/*.toml\"]\n"
	// An import of keys keys after its version line.
	load := func(keys int) error {
		var b strings.Builder
		b.WriteString("version = 3\n")
		for i := range keys {
			fmt.Fprintf(&b, "k%x = 1\n", i)
		}
		dir := collecttest.TempTree(t, map[string]string{
			"/etc/containerd/config.toml":     main,
			"/etc/containerd/conf.d/big.toml": b.String(),
		})
		_, err := LoadContainerd(collecttest.OpenFS(t, dir), ContainerdConfigPath)
		return err
	}
	at := MaxContainerdValues - mainValues - 1
	if err := load(at); err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	err := load(at + 1)
	want := fmt.Sprintf("/etc/containerd/conf.d/big.toml:%d: more than %d keys and array elements", at+2, MaxContainerdValues)
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("past the limit: %v, want %q", err, want)
	}

	// One file alone: dotted keys count each part, array elements each.
	doc := fmt.Sprintf("a.b = [%s1]\n", strings.Repeat("1, ", MaxContainerdValues-3))
	if _, err := DecodeContainerdTOML("one.toml", []byte(doc)); err != nil {
		t.Fatalf("a file at the limit: %v", err)
	}
	doc = fmt.Sprintf("a.b = [%s1]\n", strings.Repeat("1, ", MaxContainerdValues-2))
	if _, err := DecodeContainerdTOML("one.toml", []byte(doc)); err == nil || !strings.Contains(err.Error(), "one.toml:1: more than") {
		t.Fatalf("a file past the limit: %v", err)
	}
}
