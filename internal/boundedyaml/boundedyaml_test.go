package boundedyaml

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

func nestedFlow(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
func nestedBlock(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "%sk%d:\n", strings.Repeat(" ", i), i)
	}
	fmt.Fprintf(&b, "%sleaf: 1\n", strings.Repeat(" ", n))
	return b.String()
}

// laughs is the "billion laughs" document: each level lists the one
// before it ten times, so the last expands to 10^levels nodes.
func laughs(levels int) string {
	var b strings.Builder
	b.WriteString("l0: &l0 [a, a, a, a, a, a, a, a, a, a]\n")
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [", i, i)
		for j := range 10 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "*l%d", i-1)
		}
		b.WriteString("]\n")
	}
	return b.String()
}

func TestLimits(t *testing.T) {
	for _, tc := range []struct {
		name  string
		doc   string
		limit bool
	}{
		{"flow at the depth limit", nestedFlow(MaxDepth), false},
		{"flow past the depth limit", nestedFlow(MaxDepth + 1), true},
		{"a million brackets", nestedFlow(1 << 20), true},
		// nestedBlock(n) nests n+1 mappings.
		{"block at the depth limit", nestedBlock(MaxDepth - 1), false},
		{"block past the depth limit", nestedBlock(MaxDepth), true},
		{"sequence at the node limit", "[" + strings.Repeat("a,", MaxNodes-2) + "a]", false},
		{"sequence past the node limit", "[" + strings.Repeat("a,", MaxNodes-1) + "a]", true},
		{"aliases within the node limit", laughs(3), false},
		{"billion laughs", laughs(9), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var v any
			err := Decode("test.yaml", []byte(tc.doc), &v)
			if got := errors.Is(err, ErrLimit); got != tc.limit {
				t.Fatalf("Decode = %v; want limit error %v", err, tc.limit)
			}
			if tc.limit && !strings.HasPrefix(err.Error(), "test.yaml") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestAliasesDecode(t *testing.T) {
	var v struct {
		A []string `yaml:"a"`
		B []string `yaml:"b"`
	}
	if err := Decode("x.yaml", []byte("a: &x [p, q]\nb: *x\n"), &v); err != nil {
		t.Fatal(err)
	}
	if strings.Join(v.B, ",") != "p,q" {
		t.Errorf("b = %v; want the alias expanded", v.B)
	}
}

// TestErrorsHideTheText: a wrong file given as YAML (here the shape of
// /etc/passwd) is refused with its position, never its lines.
func TestErrorsHideTheText(t *testing.T) {
	passwd := "root:x:0:0:root:/root:/bin/bash\ndaemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n"
	type entry struct {
		ID string `yaml:"id"`
	}
	for _, tc := range []struct {
		name string
		v    any
		opts []yaml.DecodeOption
	}{
		{"into a list", &[]entry{}, nil},
		{"into a struct, strict", &entry{}, []yaml.DecodeOption{yaml.DisallowUnknownField()}},
		{"into a map", &map[string]int{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Decode("/etc/passwd", []byte(passwd), tc.v, tc.opts...)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, secret := range []string{"root:x", "/bin/bash", "daemon:x", "nologin"} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error quotes the file (%q): %v", secret, err)
				}
			}
			if !strings.HasPrefix(err.Error(), "/etc/passwd") {
				t.Errorf("error %q does not name the file", err)
			}
		})
	}
}

func TestUnknownKeyNamed(t *testing.T) {
	var v struct {
		ID string `yaml:"id"`
	}
	err := Decode("w.yaml", []byte("id: a\nexpirse: 2026-01-01\n"), &v, yaml.DisallowUnknownField())
	if err == nil || !strings.Contains(err.Error(), `"expirse"`) || !strings.HasPrefix(err.Error(), "w.yaml:2:") {
		t.Fatalf("Decode = %v; want the unknown key named with its line", err)
	}
}

func TestOneDocument(t *testing.T) {
	var v any
	if err := Decode("d.yaml", []byte("a: 1\n---\nb: 2\n"), &v); err == nil {
		t.Fatal("two documents accepted")
	}
	if err := Decode("d.yaml", []byte("# nothing\n"), &v); err != nil || v != nil {
		t.Fatalf("empty document: %v, %v", v, err)
	}
}

func FuzzDecode(f *testing.F) {
	for _, s := range []string{"a: 1", "- &a [x]\n- *a", nestedFlow(70), laughs(2), "!!str", "? a\n: b", "{a: [b, {c: d}]}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		_ = Decode("fuzz.yaml", data, &v)
	})
}
