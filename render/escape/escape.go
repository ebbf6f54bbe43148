// Package escape makes untrusted text (check messages from facts, titles
// and descriptions from third-party packs, hosts, waiver fields) inert in
// each output language gpuhost writes, with one escaper per language so
// that every renderer applies the same rules. HTML is html/template's job:
// its contextual escaping is the one HTML escaper.
package escape

import (
	"regexp"
	"strings"
	"unicode"
)

// Terminal returns s as one line that cannot drive a terminal: newlines
// and tabs become spaces, and control characters (escape sequences
// included) and format characters (bidi overrides, which can make text
// read other than it is) are dropped.
func Terminal(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			return ' '
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r):
			return -1
		}
		return r
	}, s)
}

// markdown makes text inert in GitHub-flavoured Markdown, in a table cell
// or in prose: a pipe would split the cell and a newline end the row;
// GitHub renders inline HTML, so markup characters become entities; and
// emphasis, strikethrough, code and link characters are escaped so that
// text cannot style itself or become a link.
var markdown = strings.NewReplacer(
	"\\", "\\\\",
	"|", "\\|",
	"\r\n", "<br>",
	"\n", "<br>",
	"\r", "<br>",
	"&", "&amp;",
	"<", "&lt;",
	">", "&gt;",
	"`", "\\`",
	"*", "\\*",
	"_", "\\_",
	"[", "\\[",
	"]", "\\]",
	"#", "\\#",
	"!", "\\!",
	"~", "\\~",
)

// Markdown escapes s for a Markdown table cell or paragraph. Line breaks
// are kept as <br>; other control and format characters are dropped. Text
// may start a line (a paragraph, a list item), so it cannot start a block
// either: leading blanks and line breaks (an indented code block, a bare
// <br>) are dropped, and a list marker at its start is escaped.
func Markdown(s string) string {
	return blockStart(markdown.Replace(strings.TrimLeft(inline(s), " \r\n")))
}

// inline keeps line breaks, makes a tab a blank and drops every other
// control or format character.
func inline(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r':
			return r
		case r == '\t':
			return ' '
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r):
			return -1
		}
		return r
	}, s)
}

// listMarker is a list item's marker at the start of a line: "-", "+" or
// "*" (already escaped), or up to nine digits and "." or ")", followed by a
// blank or the end.
var listMarker = regexp.MustCompile(`^(?:[-+]|[0-9]{1,9}[.)])(?: |$)`)

// blockStart escapes a list marker or thematic break ("---", "- - -") that
// s starts with; the other block starts (#, >, <, fences) are escaped
// wherever they are.
func blockStart(s string) string {
	switch {
	case listMarker.MatchString(s):
		i := strings.IndexAny(s, "-+.)")
		return s[:i] + "\\" + s[i:]
	case strings.HasPrefix(s, "-"):
		return "\\" + s
	}
	return s
}

// codeSafe is what a code span may hold verbatim: a backtick cannot be
// escaped inside one, and a pipe ends a table cell even there.
var codeSafe = regexp.MustCompile(`^[A-Za-z0-9._:/@+=,-]+$`)

// MarkdownCode shows an identifier (a check id, digest, path, version) as
// code. Anything but plain identifier characters is shown escaped instead,
// which is better than verbatim.
func MarkdownCode(s string) string {
	if !codeSafe.MatchString(s) {
		return Markdown(s)
	}
	return "`" + s + "`"
}

// githubData and githubProperty encode text as GitHub Actions' workflow
// commands read it: a command is one line, "::error title=T::MESSAGE", so
// a newline in a message would end it and start another command; "%" is
// the escape itself, and in a property ":" and "," would end the value.
var (
	githubData     = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A")
	githubProperty = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C")
)

// GitHubData escapes s for the message of a workflow command; other
// control characters are dropped.
func GitHubData(s string) string { return githubData.Replace(dropControls(s)) }

// GitHubProperty escapes s for a property of a workflow command (title=).
func GitHubProperty(s string) string { return githubProperty.Replace(dropControls(s)) }

// TAP returns s as the description or directive text of one TAP line: on
// one line, with "#" (which starts a directive) escaped as TAP 13 says.
func TAP(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(Terminal(s), `\`, `\\`), "#", `\#`)
}

// dropControls drops control and format characters but line breaks, which
// the callers encode.
func dropControls(s string) string {
	return strings.Map(func(r rune) rune {
		if r != '\n' && r != '\r' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r)) {
			return -1
		}
		return r
	}, s)
}
