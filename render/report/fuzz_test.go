package report

import (
	"github.com/gpuhost/gpuhost/render/escape"
	"github.com/gpuhost/gpuhost/reports"
	"regexp"

	"bytes"
	"encoding/json"
	"encoding/xml"
	"net/url"
	"strings"
	"testing"
	"unicode"
)

// FuzzRender feeds untrusted text (titles, messages, waivers all come from
// policies and scanned files) through every renderer and checks each
// document still parses and stays inert.
// tapLine is every line the tap format may write: the version and plan,
// a comment, a test point, and the lines of a YAML block.
var tapLine = regexp.MustCompile(`^(TAP version 13|1\.\.\d+|# .*|(not )?ok \d+ - .*|  ---|  \.\.\.|  [a-z]+:( .*)?|    - ".*")$`)

func FuzzRender(f *testing.F) {
	f.Add("GH-TLS-001", "title", "high", "fail", "/etc/ssl/openssl.cnf:12: MinProtocol", "fix it", "alice")
	f.Add("GH-X-1", "<script>alert(1)</script>", "critical", "waived", "a|b\nc", "]]>&<>\"'", "bob & eve")
	f.Add("", "", "", "", "", "", "")
	f.Add("GH-\x00-1", "\x1b[31mred\x1b[0m", "weird", "error", "\xff\xfe bad utf8", "\u202e", "`code`")
	f.Add("ID", "t", "low", "skip", "/a b:3: space", "*bold* _em_ [link](javascript:x)", "x")
	f.Add("ID", "t", "info", "pass", `src="http://x" href="https://y"`, "<img src=x onerror=alert(1)>", "z")
	f.Fuzz(func(t *testing.T, id, title, sev, status, msg, remediation, approver string) {
		res := reports.Result{
			ID: id, Title: title, Severity: sev, Status: status,
			Messages:    []string{msg, msg + "\n" + title},
			Remediation: remediation,
			Controls:    map[string][]string{title: {msg}},
			Waiver: &reports.Waiver{Justification: msg, ApprovedBy: approver, Expires: remediation, Target: id, Ticket: title,
				Scope: &reports.WaiverScope{Kinds: []string{sev}, Hosts: []string{approver, msg}}},
			Package: "gpuhost." + title + "." + id,
		}
		rep := &reports.Report{Schema: reports.Schema, Target: reports.Target{Kind: sev, Ref: msg, ScannedAt: title, Hostname: approver},
			Results: []reports.Result{res, res}, ToolVersion: approver, FactsDigest: id, PolicyDigest: title,
			Collectors: map[string]reports.CollectorStatus{id: {Status: status, Reason: msg}}}
		rep.Summarize()
		for _, format := range resultFormats() {
			r, _ := Lookup(format)
			var buf bytes.Buffer
			if err := r.Render(&buf, rep); err != nil {
				t.Fatalf("%s: %v", format, err)
			}
			out := buf.Bytes()
			switch format {
			case "json", "sarif":
				if !json.Valid(out) {
					t.Fatalf("%s: invalid JSON", format)
				}
			case "github":
				for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
					if !strings.HasPrefix(line, "::") || strings.ContainsAny(line, "\r") {
						t.Fatalf("github: a line that is not one workflow command: %q", line)
					}
				}
			case "tap":
				for _, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
					if !tapLine.MatchString(line) {
						t.Fatalf("tap: a line TAP 13 does not have: %q", line)
					}
				}
			case "junit":
				var v struct {
					Tests int `xml:"tests,attr"`
				}
				if err := xml.Unmarshal(out, &v); err != nil {
					t.Fatalf("junit: %v", err)
				}
				if v.Tests != 2 {
					t.Fatalf("junit: tests=%d", v.Tests)
				}
			case "html":
				if externalURL.Match(out) {
					t.Fatal("html: external URL")
				}
				if n := bytes.Count(bytes.ToLower(out), []byte("<script")); n != 1 {
					t.Fatalf("html: %d script tags", n)
				}
				if bytes.Contains(bytes.ToLower(out), []byte("<img")) {
					t.Fatal("html: injected markup")
				}
			case "markdown":
				if bytes.Contains(bytes.ToLower(out), []byte("<script")) || bytes.Contains(bytes.ToLower(out), []byte("<img")) {
					t.Fatal("markdown: injected markup")
				}
			case "table":
				for _, r := range string(out) {
					if r != '\n' && (unicode.IsControl(r) || unicode.Is(unicode.Cf, r)) {
						t.Fatalf("table: control character %U", r)
					}
				}
				// Coverage, a line per unevaluated critical or high
				// check, a blank line; the header, two rows, a blank line,
				// the counts; and for waived results a blank line, a
				// heading and one line each.
				want := 7
				if (status == reports.StatusSkip || status == reports.StatusError) && (sev == "critical" || sev == "high") {
					want += 2
				}
				if status == reports.StatusWaived {
					want += 4
				}
				// Failures are named again under the counts.
				if status == reports.StatusFail {
					want++
				}
				// A long message wraps onto lines of its own; a gap, in a
				// table not fitted to a terminal, stays one line.
				want += 2 * (len(wrap(escape.Terminal(tableMessage(res)), maxMessageWidth)) - 1)
				if lines := strings.Count(string(out), "\n"); lines != want {
					t.Fatalf("table: %d lines, want %d", lines, want)
				}
			}
		}
	})
}

// FuzzArtifactURI holds any path a policy names to a URI reference that
// stays inside IMAGEROOT: relative, with no scheme or host of its own, so
// it resolves under the scanned root and never to a build machine's path.
func FuzzArtifactURI(f *testing.F) {
	for _, s := range []string{"/etc/ssh/sshd_config", "etc/x", "/../../etc/shadow", "/a:b/c", "//host/x", "/x y/%2e%2e", "", "/"} {
		f.Add(s)
	}
	base, _ := url.Parse("file:///srv/rootfs/")
	f.Fuzz(func(t *testing.T, p string) {
		u := artifactURI(p)
		ref, err := url.Parse(u)
		if err != nil {
			t.Fatalf("artifactURI(%q) = %q, which does not parse: %v", p, u, err)
		}
		if ref.IsAbs() || ref.Host != "" || strings.HasPrefix(u, "/") {
			t.Fatalf("artifactURI(%q) = %q is not relative", p, u)
		}
		if got := base.ResolveReference(ref); !strings.HasPrefix(got.Path, "/srv/rootfs/") || got.Host != "" {
			t.Fatalf("artifactURI(%q) = %q resolves to %s, outside the root", p, u, got)
		}
	})
}
