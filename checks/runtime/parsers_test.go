package runtime

import (
	"testing"
)

func TestMergeTOMLRecursive(t *testing.T) {
	dst := map[string]any{"a": map[string]any{"x": int64(1), "y": int64(2)}, "s": "old"}
	src := map[string]any{"a": map[string]any{"y": int64(3), "z": int64(4)}, "s": "new"}
	if err := MergeTOML(dst, src); err != nil {
		t.Fatal(err)
	}
	a := dst["a"].(map[string]any)
	if a["x"] != int64(1) || a["y"] != int64(3) || a["z"] != int64(4) || dst["s"] != "new" {
		t.Errorf("merged = %v", dst)
	}
}

func TestDecodeContainerdTOMLVersion(t *testing.T) {
	for _, in := range []string{"version = 4", "version = \"2\"", "imports = \"x\"", "imports = [1]"} {
		if _, err := DecodeContainerdTOML("c.toml", []byte(in)); err == nil {
			t.Errorf("%q decoded without error", in)
		}
	}
}
