package fleet

import (
	"fmt"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
)

func TestRefCache(t *testing.T) {
	c := getRefCache()
	defer putRefCache(c)
	a, b := ast.MustParseRef("data.p.deny"), ast.MustParseRef("data.p.skip")
	if v, undef := c.Get(a); v != nil || undef {
		t.Fatalf("empty cache: Get = %v, %v", v, undef)
	}
	c.Put(a, ast.StringTerm("x"))
	c.Put(b, nil)
	if v, undef := c.Get(a); v == nil || undef || !v.Equal(ast.StringTerm("x")) {
		t.Fatalf("Get(%v) = %v, %v; want \"x\"", a, v, undef)
	}
	if v, undef := c.Get(b); v != nil || !undef {
		t.Fatalf("Get(%v) = %v, %v; want undefined", b, v, undef)
	}
	// The ref a caller passes may be a window on a slice it reuses.
	scratch := ast.MustParseRef("data.q.deny")
	c.Put(scratch, ast.BooleanTerm(true))
	scratch[1] = ast.StringTerm("r")
	if v, _ := c.Get(ast.MustParseRef("data.q.deny")); v == nil {
		t.Fatal("an entry changed when the caller reused its ref")
	}

	c.Push()
	if v, undef := c.Get(a); v != nil || undef {
		t.Fatalf("a pushed frame sees the outer entry: %v, %v", v, undef)
	}
	c.Put(a, ast.StringTerm("inner"))
	c.Pop()
	if v, _ := c.Get(a); !v.Equal(ast.StringTerm("x")) {
		t.Fatalf("after Pop, Get = %v; want the outer \"x\"", v)
	}
	if got := len(c.Keys()); got != 3 {
		t.Fatalf("Keys: %d refs, want 3", got)
	}
}

// TestRefCacheManyEntries puts enough refs that hash chains and growth are
// exercised, and checks a cache taken again from the pool starts empty.
func TestRefCacheManyEntries(t *testing.T) {
	c := getRefCache()
	refs := make([]ast.Ref, 2000)
	for i := range refs {
		refs[i] = ast.MustParseRef(fmt.Sprintf("data.p%d.deny", i))
		c.Put(refs[i], ast.IntNumberTerm(i))
	}
	for i, r := range refs {
		if v, _ := c.Get(r); v == nil || !v.Equal(ast.IntNumberTerm(i)) {
			t.Fatalf("Get(%v) = %v, want %d", r, v, i)
		}
	}
	c.Put(refs[7], ast.IntNumberTerm(-7))
	if v, _ := c.Get(refs[7]); !v.Equal(ast.IntNumberTerm(-7)) {
		t.Fatalf("a second Put did not replace the value: %v", v)
	}
	putRefCache(c)
	c = getRefCache()
	defer putRefCache(c)
	for _, r := range refs {
		if v, undef := c.Get(r); v != nil || undef {
			t.Fatalf("a reused cache still holds %v", r)
		}
	}
}
