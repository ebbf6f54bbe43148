package escape

import (
	"regexp"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// hostile is text an attacker controls: a check message built from facts,
// a title from a third-party pack.
var hostile = testutil.Hostile

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
	for in, want := range map[string]string{
		"a\nb":             "a<br>b",
		"~~~":              "\\~\\~\\~",
		"~~strike~~":       "\\~\\~strike\\~\\~",
		"- item":           "\\- item",
		"+ item":           "\\+ item",
		"---":              "\\---",
		"- - -":            "\\- - -",
		"1. first":         "1\\. first",
		"123456789) ninth": "123456789\\) ninth",
		"1.2.10":           "1.2.10",
		"GH-SSH-001 - x":   "GH-SSH-001 - x",
		"    code":         "code",
		"\t\tcode":         "code",
		"a    b":           "a    b",
		"x\n- y":           "x<br>- y",
		"\n\r\n - y":       "\\- y",
	} {
		if got := Markdown(in); got != want {
			t.Errorf("Markdown(%q) = %q, want %q", in, got, want)
		}
	}
}

// Escaped text starts no Markdown block: no list, rule, code block, fence,
// heading, quote or HTML block, wherever a renderer puts it.
func TestMarkdownStartsNoBlock(t *testing.T) {
	for _, s := range hostile {
		got := Markdown(s)
		if got == "" {
			continue
		}
		if strings.HasPrefix(got, " ") || blockOpener.MatchString(got) {
			t.Errorf("Markdown(%q) = %q can start a block", s, got)
		}
	}
}

// blockOpener matches what opens a CommonMark block at a line's start.
var blockOpener = regexp.MustCompile("^(?:-|[+*](?: |$)|[>#<~`]|[0-9]{1,9}[.)](?: |$))")

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
		md := Markdown(s)
		got := strings.ReplaceAll(md, "<br>", "")
		if strings.ContainsAny(got, "\n\r<>") || unescapedLink.MatchString(got) {
			t.Fatalf("Markdown(%q) = %q", s, got)
		}
		if strings.HasPrefix(md, " ") || blockOpener.MatchString(md) {
			t.Fatalf("Markdown(%q) = %q can start a block", s, md)
		}
		if strings.ContainsAny(Terminal(s), "\x1b\n\r\t") {
			t.Fatalf("Terminal(%q) keeps a control character", s)
		}
	})
}
