package testutil

import "strings"

// Hostile is text an attacker controls, for the tests of everything that
// renders it: a check message built from scanned files, a title or
// description from a third-party pack, a host ref from a saved facts
// document. Each entry tries to break out of where a renderer puts it: a
// Markdown table cell or paragraph, an HTML element or attribute, a
// terminal line.
var Hostile = []string{
	"a | b | c",
	"\\| escaped pipe",
	"`code` ``double`` **bold** _em_ ~~strike~~",
	"line one\nline two\r\n\tthree\rfour",
	"<script>alert(1)</script>",
	"<img src=x onerror=alert(1)>",
	"\" onmouseover=\"alert(1)\" x=\"",
	"' onfocus='alert(1)",
	"</td></tr></table><h1>injected</h1>",
	"<!-- comment --> <![CDATA[ ]]>",
	"[click](javascript:alert(1))",
	"![x](http://attacker.invalid/pixel.png)",
	"[ref]: http://attacker.invalid/",
	"<http://attacker.invalid/>",
	"# heading",
	"- list item",
	"+ plus item",
	"1. ordered",
	"12) ordered too",
	"    indented code",
	"> quote",
	"---",
	"~~~",
	"```",
	"&lt; already escaped &amp;",
	"\x1b[2J\x1b[31mPASS\x1b[0m",
	"nul\x00bell\x07backspace\x08",
	"safe\u202egnp.exe",
	"\xff\xfe not utf-8",
	strings.Repeat("long-word", 400),
	strings.Repeat("| <b>x</b> ", 300),
}
