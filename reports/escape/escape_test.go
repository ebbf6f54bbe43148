package escape

import (
	"regexp"
	"strings"
	"testing"
)

// hostile is text an attacker controls: a check message built from facts,
// a title from a third-party pack.
var hostile = []string{
	"\x1b[2J\x1b[31mPASS\x1b[0m",
	"line one\nline two\r\n\tthree",
	"safe\u202egnp.exe",
	"<script>alert(1)</script>",
	"<img src=x onerror=alert(1)>",
	"[click](javascript:alert(1))",
	"![x](http://attacker/pixel.png)",
	"a | b | c",
	"`code` **bold** _em_ # heading",
	"&lt; already escaped",
	"\\| escaped pipe",
}

// unescapedLink is "](" not preceded by a backslash: a Markdown link.
var unescapedLink = regexp.MustCompile(`(^|[^\\])\]\(`)

func TestTerminal(t *testing.T) {
	for _, s := range hostile {
		got := Terminal(s)
		if strings.ContainsAny(got, "\x1b\n\r\t\u202e") {
			t.Errorf("Terminal(%q) = %q keeps a control or format character", s, got)
		}
	}
	if got := Terminal("GPU 3: NVLink 5 down"); got != "GPU 3: NVLink 5 down" {
		t.Errorf("plain text changed: %q", got)
	}
}

func TestMarkdown(t *testing.T) {
	for _, s := range hostile {
		got := Markdown(s)
		for _, bad := range []string{"<script", "<img", "\n", "\r", "\x1b", "\u202e"} {
			if strings.Contains(got, bad) {
				t.Errorf("Markdown(%q) = %q keeps %q", s, got, bad)
			}
		}
		if unescapedLink.MatchString(got) {
			t.Errorf("Markdown(%q) = %q can still form a link", s, got)
		}
		// Every pipe left is escaped, so a cell cannot split.
		if strings.Count(got, "|") != strings.Count(got, "\\|") {
			t.Errorf("Markdown(%q) = %q has an unescaped pipe", s, got)
		}
	}
	if got := Markdown("a\nb"); got != "a<br>b" {
		t.Errorf("line break: %q", got)
	}
}

func TestMarkdownCode(t *testing.T) {
	if got := MarkdownCode("GH-SSH-001"); got != "`GH-SSH-001`" {
		t.Errorf("identifier: %q", got)
	}
	if got := MarkdownCode("a`b|c"); strings.Contains(got, "`") && !strings.Contains(got, "\\`") {
		t.Errorf("hostile code: %q", got)
	}
}

func FuzzMarkdown(f *testing.F) {
	for _, s := range hostile {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := strings.ReplaceAll(Markdown(s), "<br>", "")
		if strings.ContainsAny(got, "\n\r<>") || unescapedLink.MatchString(got) {
			t.Fatalf("Markdown(%q) = %q", s, got)
		}
		if strings.ContainsAny(Terminal(s), "\x1b\n\r\t") {
			t.Fatalf("Terminal(%q) keeps a control character", s)
		}
	})
}
