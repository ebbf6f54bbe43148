package render

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
)

type upper string

func (u upper) Format() string { return string(u) }

func (u upper) Render(w io.Writer, doc string) error {
	_, err := fmt.Fprintf(w, "%s:%s", u, strings.ToUpper(doc))
	return err
}

func TestRegistry(t *testing.T) {
	reg := NewRegistry[string]("note", upper("table"), upper("markdown"))
	reg.Register(upper("json"))
	if got, want := reg.Formats(), []string{"table", "markdown", "json"}; !slices.Equal(got, want) {
		t.Errorf("Formats() = %q, want %q, the order they were registered in", got, want)
	}
	var buf bytes.Buffer
	if err := reg.Render(&buf, "hi", "markdown"); err != nil || buf.String() != "markdown:HI" {
		t.Errorf("Render = %q, %v", buf.String(), err)
	}
	_, err := reg.Lookup("pdf")
	if err == nil || err.Error() != `unknown note format "pdf" (want one of table, markdown, json)` {
		t.Errorf("Lookup(pdf) = %v", err)
	}
	if err := reg.Render(&buf, "hi", "pdf"); err == nil {
		t.Error("Render accepted an unknown format")
	}
	defer func() {
		if recover() == nil {
			t.Error("a second json renderer was registered")
		}
	}()
	reg.Register(upper("json"))
}
