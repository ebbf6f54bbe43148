package catalog

import (
	"html/template"
	"io"
	"strings"

	policycatalog "github.com/gpuhost/gpuhost/policy/catalog"
)

type htmlRenderer struct{}

func (htmlRenderer) Format() string { return "html" }

// The page is one self-contained file: inline CSS, no scripts, no external
// URLs, so it can be attached to a review ticket or opened offline.
var page = template.Must(template.New("catalog").Funcs(template.FuncMap{
	"join":     strings.Join,
	"controls": controlsOrNone,
	"orNone":   orNone,
	"params": func(ps []string) string {
		out := make([]string, 0, len(ps))
		for _, p := range ps {
			out = append(out, paramName(p, func(s string) string { return s }))
		}
		return orNone(out)
	},
	"anchor": anchor,
	"trim":   strings.TrimSpace,
}).Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gpuhost policy catalog</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:72rem;padding:0 1rem;color:#1b1f24;line-height:1.45}
h1{font-size:1.6rem}h2{margin-top:2.5rem;border-bottom:1px solid #d0d7de;padding-bottom:.3rem}
table{border-collapse:collapse;margin:.8rem 0;font-size:.92rem}
th,td{border:1px solid #d0d7de;padding:.3rem .55rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}
code{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.88em;background:#f6f8fa;padding:0 .2em;border-radius:3px;word-break:break-all}
.check{border:1px solid #d0d7de;border-radius:6px;padding:.2rem 1rem .8rem;margin:1rem 0}
.sev{display:inline-block;padding:0 .5em;border-radius:1em;font-size:.8rem;font-weight:600;color:#fff}
.sev-critical{background:#8b0000}.sev-high{background:#cf222e}.sev-medium{background:#bc4c00}.sev-low{background:#4d6a00}.sev-info{background:#57606a}
.matrix{overflow-x:auto}.matrix th.col{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap}
.matrix td.mark{text-align:center;color:#1a7f37;font-weight:700}
</style>
</head>
<body>
<h1>gpuhost policy catalog</h1>
<p>{{len .Entries}} checks. Each is one Rego package; <code>deny</code> gives its failures, <code>skip</code> marks it not applicable.</p>

<h2>Checks</h2>
<table>
<tr><th>ID</th><th>Severity</th><th>Title</th><th>Targets</th></tr>
{{- range .Entries}}
<tr><td><a href="#{{anchor .ID}}">{{.ID}}</a></td><td><span class="sev sev-{{.Severity}}">{{.Severity}}</span></td><td>{{.Title}}</td><td>{{join .Targets ", "}}</td></tr>
{{- end}}
</table>
{{range .Entries}}
<div class="check" id="{{anchor .ID}}">
<h3>{{.ID}}: {{.Title}} <span class="sev sev-{{.Severity}}">{{.Severity}}</span></h3>
{{- with trim .Description}}
<p>{{.}}</p>
{{- end}}
<table>
<tr><th>Targets</th><td>{{orNone .Targets}}</td></tr>
<tr><th>Collectors</th><td>{{orNone .Requires}}</td></tr>
{{- with .Judges}}
<tr><th>Judged when absent</th><td>{{join . ", "}}</td></tr>
{{- end}}
<tr><th>Parameters</th><td>{{params .Params}}</td></tr>
<tr><th>Controls</th><td>{{controls .Controls}}</td></tr>
<tr><th>Policy</th><td><code>{{.Package}}</code> in <code>{{.File}}</code></td></tr>
</table>
<p><strong>Remediation:</strong> {{trim .Remediation}}</p>
</div>
{{- end}}

<h2>Parameters</h2>
{{- if .Params}}
<table>
<tr><th>Parameter</th><th>Value</th><th>Read by</th></tr>
{{- range .Params}}
<tr><td><code>{{.Name}}</code></td><td><code>{{.Value}}</code></td><td>{{orNone .Readers}}</td></tr>
{{- end}}
</table>
{{- else}}
<p>None.</p>
{{- end}}

<h2>Control matrix</h2>
{{- range $m := .Matrices}}
<h3>{{.Framework}}</h3>
<div class="matrix"><table>
<tr><th>Control</th>{{range .Checks}}<th class="col">{{.}}</th>{{end}}</tr>
{{- range $i, $ctl := .Controls}}
<tr><th>{{$ctl}}</th>{{range index $m.Marks $i}}{{if .}}<td class="mark">✓</td>{{else}}<td></td>{{end}}{{end}}</tr>
{{- end}}
</table></div>
{{- else}}
<p>No check maps to a control.</p>
{{- end}}
</body>
</html>
`))

func (htmlRenderer) Render(w io.Writer, c *policycatalog.Catalog) error {
	return page.Execute(w, struct {
		Entries  []policycatalog.Entry
		Params   []policycatalog.Param
		Matrices []policycatalog.Matrix
	}{c.Entries, c.ParamTable(), c.Matrices()})
}
