package osinfo

import (
	"strings"
	"testing"
)

func TestSplitCmdline(t *testing.T) {
	got := splitCmdline("  a  b=\"c d\" \"e f\"\tg=\n")
	if strings.Join(got, "|") != "a|b=c d|e f|g=" {
		t.Errorf("%q", got)
	}
	if splitCmdline("") == nil {
		t.Error("nil for empty")
	}
}

func TestMajorVersion(t *testing.T) {
	for in, want := range map[string]int{"252.22-1~deb12u1": 252, "1:249.11": 249, "x": 0, "": 0, "99999999999999": 999999999} {
		if got := majorVersion(in); got != want {
			t.Errorf("majorVersion(%q) = %d, want %d", in, got, want)
		}
	}
}
