package report

import (
	"bufio"
	"fmt"
	"html/template"
	"io"
	"sort"
	"strings"

	"github.com/gpuhost/gpuhost/reports"
)

type htmlRenderer struct{}

var _ Renderer = (*htmlRenderer)(nil)

func (*htmlRenderer) Format() string { return "html" }

// Ext is the ending of a html report file.
func (*htmlRenderer) Ext() string { return "html" }

// Chart geometry, in SVG user units. The chart is drawn in Go so the report
// reads the same with scripts disabled.
const (
	chartLabelW = 90
	chartBarW   = 460
	chartCountW = 70
	chartRowH   = 26
	chartBarH   = 18
	chartTop    = 8
)

// chartStatuses are the stacked segments, worst first.
var chartStatuses = []string{reports.StatusFail, reports.StatusError, reports.StatusWaived, reports.StatusSkip, reports.StatusPass}

// statusFill is one palette for badges, chart and legend.
var statusFill = map[string]string{
	reports.StatusFail:   "#c62828",
	reports.StatusError:  "#8e24aa",
	reports.StatusWaived: "#00838f",
	reports.StatusSkip:   "#b59b00",
	reports.StatusPass:   "#2e7d32",
}

type htmlView struct {
	Rep        *reports.Report
	Summary    reports.Summary
	Statuses   []htmlStatusCount
	Severities []string
	Chart      htmlChart
	Checks     []htmlCheck
	Collectors []htmlCollector
	Verdict    string
	VerdictCSS string
	Coverage   string
	Gaps       []string
	// Compliance is the profile's block, when the scan judged one.
	Compliance *htmlCompliance
}

// htmlCompliance is a compliance profile's per-section totals and the
// controls a reviewer acts on, as the table format shows them.
type htmlCompliance struct {
	Heading, Counts string
	Statuses        []string
	Sections        []htmlSection
	Attention       []reports.Control
}

type htmlSection struct {
	Label  string
	Counts []int
}

type htmlStatusCount struct {
	Status string
	Count  int
	Color  string
}

type htmlChart struct {
	Width, Height int
	Rows          []htmlChartRow
	Legend        []htmlLegend
	LegendY       int
}

type htmlChartRow struct {
	Label  string
	Y      int
	TextY  int
	Total  int
	Segs   []htmlSeg
	CountX int
}

type htmlSeg struct {
	X, Y, W int
	TextY   int
	Color   string
	Title   string
	Label   string
	LabelX  int
}

type htmlLegend struct {
	X, TextX int
	Color    string
	Label    string
}

// The two kinds of skip, as the tiles, the filter and the rows name them.
const (
	skipNotApplicable = "skip: not applicable"
	skipCouldNotRun   = "skip: could not run"
)

// filterOf is the tile a result counts under.
func filterOf(res reports.Result) string {
	switch {
	case res.Status != reports.StatusSkip:
		return res.Status
	case res.OutOfScope:
		return skipNotApplicable
	}
	return skipCouldNotRun
}

type htmlCheck struct {
	reports.Result
	Rank     int
	Open     bool
	Controls []htmlControl
	Color    string
	// Filter is the status tile and filter box the row belongs to: its
	// status, a skip told as not applicable or could not run.
	Filter string
}

type htmlControl struct {
	Framework string
	IDs       string
}

type htmlCollector struct {
	Name, Status, Reason string
}

func (*htmlRenderer) Render(w io.Writer, rep *reports.Report) error {
	s := reports.Tally(rep)
	v := htmlView{Rep: rep, Summary: s, Severities: reports.Severities}
	for _, st := range reports.Statuses {
		if st == reports.StatusSkip {
			v.Statuses = append(v.Statuses, htmlStatusCount{Status: skipNotApplicable, Count: s.NotApplicable, Color: statusFill[st]},
				htmlStatusCount{Status: skipCouldNotRun, Count: s.CouldNotRun(), Color: statusFill[st]})
			continue
		}
		v.Statuses = append(v.Statuses, htmlStatusCount{Status: st, Count: s.ByStatus[st], Color: statusFill[st]})
	}
	cov := reports.CoverageOf(rep)
	v.Coverage = coverageLine(cov)
	for _, g := range cov.Gaps {
		v.Gaps = append(v.Gaps, gapLine(g))
	}
	for _, n := range cov.NotJudged {
		v.Gaps = append(v.Gaps, notJudgedLine(n))
	}
	switch n := criticalGaps(cov); {
	case s.ByStatus[reports.StatusError] > 0:
		v.Verdict, v.VerdictCSS = "Scan incomplete: some checks errored", "error"
	case s.ByStatus[reports.StatusFail] > 0:
		v.Verdict, v.VerdictCSS = fmt.Sprintf("%d failing check(s)", s.ByStatus[reports.StatusFail]), "fail"
	case n > 0:
		// No failure is no pass while critical checks never ran.
		v.Verdict, v.VerdictCSS = fmt.Sprintf("Incomplete: %d critical check(s) did not run", n), "error"
	default:
		v.Verdict, v.VerdictCSS = "No failing checks", "pass"
	}
	if c := rep.Compliance; c != nil {
		hc := &htmlCompliance{Heading: complianceHeading(c), Counts: complianceCounts(c), Attention: attention(c)}
		for _, st := range reports.ControlStatuses {
			hc.Statuses = append(hc.Statuses, strings.ReplaceAll(st, "_", " "))
		}
		for _, sec := range c.Sections {
			row := htmlSection{Label: strings.TrimSpace(sec.ID + " " + sec.Title)}
			for _, st := range reports.ControlStatuses {
				row.Counts = append(row.Counts, sec.ByStatus[st])
			}
			hc.Sections = append(hc.Sections, row)
		}
		v.Compliance = hc
	}
	v.Chart = buildChart(rep)
	for _, res := range rep.Results {
		c := htmlCheck{
			Result: res,
			Rank:   reports.SeverityRank(res.Severity),
			Open:   res.Status == reports.StatusFail || res.Status == reports.StatusError,
			Color:  statusFill[res.Status],
			Filter: filterOf(res),
		}
		for _, fw := range sortedFrameworks(res.Controls) {
			c.Controls = append(c.Controls, htmlControl{Framework: fw, IDs: strings.Join(res.Controls[fw], ", ")})
		}
		v.Checks = append(v.Checks, c)
	}
	names := make([]string, 0, len(rep.Collectors))
	for n := range rep.Collectors {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		cs := rep.Collectors[n]
		v.Collectors = append(v.Collectors, htmlCollector{Name: n, Status: cs.Status, Reason: cs.Reason})
	}

	bw := bufio.NewWriter(w)
	if err := htmlTemplate.Execute(bw, v); err != nil {
		return fmt.Errorf("rendering html report: %w", err)
	}
	return bw.Flush()
}

// buildChart lays out one stacked bar per severity, every bar on the same
// scale so their lengths compare.
func buildChart(rep *reports.Report) htmlChart {
	counts := map[string]map[string]int{}
	labels := append([]string{}, reports.Severities...)
	for _, sev := range reports.Severities {
		counts[sev] = map[string]int{}
	}
	for _, res := range rep.Results {
		sev := res.Severity
		if !reports.ValidSeverity(sev) {
			sev = "unknown"
			if counts[sev] == nil {
				counts[sev] = map[string]int{}
				labels = append(labels, sev)
			}
		}
		counts[sev][res.Status]++
	}
	maxTotal := 1
	for _, c := range counts {
		t := 0
		for _, n := range c {
			t += n
		}
		maxTotal = max(maxTotal, t)
	}
	ch := htmlChart{Width: chartLabelW + chartBarW + chartCountW}
	for i, sev := range labels {
		y := chartTop + i*chartRowH
		row := htmlChartRow{Label: sev, Y: y, TextY: y + chartBarH - 5, CountX: chartLabelW + chartBarW + 8}
		x := chartLabelW
		for _, st := range chartStatuses {
			n := counts[sev][st]
			if n == 0 {
				continue
			}
			row.Total += n
			wdt := max(n*chartBarW/maxTotal, 2)
			seg := htmlSeg{X: x, Y: y, TextY: y + chartBarH - 5, W: wdt, Color: statusFill[st], Title: fmt.Sprintf("%s %s: %d", sev, st, n)}
			// Only label segments wide enough to hold the number.
			if wdt >= 18 {
				seg.Label = fmt.Sprint(n)
				seg.LabelX = x + wdt/2
			}
			row.Segs = append(row.Segs, seg)
			x += wdt
		}
		ch.Rows = append(ch.Rows, row)
	}
	ch.LegendY = chartTop + len(labels)*chartRowH + 8
	x := chartLabelW
	for _, st := range chartStatuses {
		ch.Legend = append(ch.Legend, htmlLegend{X: x, TextX: x + 16, Color: statusFill[st], Label: st})
		x += 16 + 8*len(st) + 22
	}
	ch.Height = ch.LegendY + 20
	return ch
}

var htmlTemplate = template.Must(template.New("report").Parse(htmlSource))

// htmlSource is the whole page. Everything is inline and the CSP forbids
// any fetch, so the file can be mailed, archived and opened offline.
const htmlSource = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>gpuhost scan: {{.Rep.Target.Kind}} {{.Rep.Target.Ref}}</title>
<style>
:root{--fg:#1b1f24;--muted:#57606a;--bg:#fff;--panel:#f6f8fa;--line:#d0d7de}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header,main{max-width:1100px;margin:0 auto;padding:16px 24px}
header{border-bottom:1px solid var(--line)}
h1{font-size:22px;margin:0 0 8px;word-break:break-all}
h2{font-size:17px;margin:24px 0 8px}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12.5px}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 16px;margin:10px 0 0}
dl.meta dt{color:var(--muted)}
dl.meta dd{margin:0;word-break:break-all}
.verdict{display:inline-block;padding:4px 10px;border-radius:6px;font-weight:600;color:#fff}
.verdict.fail{background:#c62828}.verdict.error{background:#8e24aa}.verdict.pass{background:#2e7d32}
.verdict.caveat{background:#ef6c00;margin-left:6px}
.cards{display:flex;flex-wrap:wrap;gap:8px;margin:8px 0}
.card{border:1px solid var(--line);border-left:6px solid var(--muted);border-radius:6px;padding:6px 12px;min-width:110px;background:var(--panel)}
.card b{display:block;font-size:22px}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;color:#fff;white-space:nowrap;background:#9e9e9e}
.sev-critical{background:#7f0000}.sev-high{background:#d84315}.sev-medium{background:#ef8f00;color:#1b1f24}.sev-low{background:#5c6bc0}.sev-info{background:#78909c}
.st-fail{background:#c62828}.st-error{background:#8e24aa}.st-waived{background:#00838f}.st-skip{background:#b59b00;color:#1b1f24}.st-pass{background:#2e7d32}
.filters{position:sticky;top:0;background:var(--bg);border-bottom:1px solid var(--line);padding:8px 0;display:flex;flex-wrap:wrap;gap:12px;align-items:center;z-index:1}
.filters label{white-space:nowrap}
.filters input[type=search]{min-width:220px;padding:3px 6px}
details.check{border:1px solid var(--line);border-left:6px solid var(--muted);border-radius:6px;margin:6px 0;background:var(--bg)}
details.check[hidden]{display:none}
details.check.fail{border-left-color:#c62828}details.check.error{border-left-color:#8e24aa}details.check.waived{border-left-color:#00838f}details.check.skip{border-left-color:#b59b00}details.check.pass{border-left-color:#2e7d32}
details.check>summary{cursor:pointer;padding:6px 10px}
details.check>summary .title{font-weight:600;margin-left:6px}
.body{padding:4px 14px 10px;border-top:1px solid var(--line);background:var(--panel)}
.body h3{font-size:12px;margin:10px 0 4px;color:var(--muted);text-transform:uppercase;letter-spacing:.03em}
.body ul{margin:0;padding-left:20px}
.body li,.body p{white-space:pre-wrap;word-break:break-word;margin:0}
.waiver{border:1px dashed #00838f;padding:6px 10px;border-radius:6px;background:#e0f7fa}
.waiver.expired{border-color:#c62828;background:#ffebee}
.waiver dl{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;margin:0}
.waiver dd{margin:0;white-space:pre-wrap}
table.coll{border-collapse:collapse}
table.coll td,table.coll th{border:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
svg{max-width:100%;height:auto}
svg text{font:12px system-ui,sans-serif;fill:#1b1f24}
svg text.seg{fill:#fff;font-weight:600;text-anchor:middle}
.muted{color:var(--muted)}
@media print{.filters{display:none}details.check[hidden]{display:block}}
</style>
</head>
<body>
<header>
<h1>gpuhost scan: {{.Rep.Target.Kind}} <span class="mono">{{.Rep.Target.Ref}}</span></h1>
<span class="verdict {{.VerdictCSS}}">{{.Verdict}}</span>{{range .Rep.Caveats}}
<span class="verdict caveat">Caveat: {{.}}</span>{{end}}
<dl class="meta">
<dt>Target</dt><dd>{{.Rep.Target.Kind}} <code>{{.Rep.Target.Ref}}</code>{{with .Rep.Target.Hostname}} on host <code>{{.}}</code>{{end}}</dd>
<dt>Scanned at</dt><dd>{{or .Rep.Target.ScannedAt "unknown"}}</dd>
<dt>Tool version</dt><dd>gpuhost {{or .Rep.ToolVersion "unknown"}}</dd>
<dt>Facts digest</dt><dd><code>{{or .Rep.FactsDigest "none"}}</code></dd>
<dt>Policy digest</dt><dd><code>{{or .Rep.PolicyDigest "none"}}</code></dd>
<dt>Report schema</dt><dd><code>{{.Rep.Schema}}</code></dd>
</dl>
</header>
<main>
<h2>Coverage</h2>
<p class="coverage">{{.Coverage}}</p>
{{if .Gaps}}<ul class="gaps">
{{range .Gaps}}<li>{{.}}</li>
{{end}}</ul>
{{end}}{{with .Compliance}}<h2>{{.Heading}}</h2>
<p class="coverage">{{.Counts}}</p>
<table class="compliance"><thead><tr><th>Section</th>{{range .Statuses}}<th>{{.}}</th>{{end}}</tr></thead><tbody>
{{range .Sections}}<tr><td>{{.Label}}</td>{{range .Counts}}<td>{{.}}</td>{{end}}</tr>
{{end}}</tbody></table>
{{if .Attention}}<ul class="gaps">
{{range .Attention}}<li><b>{{.ID}}</b> {{.Title}} [{{.Status}}]: {{.Reason}}{{if .Remediation}} Fix: {{.Remediation}}{{end}}</li>
{{end}}</ul>
{{end}}{{end}}<h2>Summary</h2>
<div class="cards">
{{range .Statuses}}<div class="card" style="border-left-color:{{.Color}}"><b>{{.Count}}</b>{{.Status}}</div>
{{end}}<div class="card"><b>{{.Summary.Total}}</b>total</div>
</div>
<p>Failures by severity:{{range $i, $s := .Severities}}{{if $i}},{{end}} {{$s}} <b>{{index $.Summary.BySeverity $s}}</b>{{end}}</p>
<svg role="img" aria-labelledby="chart-title" width="{{.Chart.Width}}" height="{{.Chart.Height}}" viewBox="0 0 {{.Chart.Width}} {{.Chart.Height}}">
<title id="chart-title">Checks by severity, stacked by status</title>
{{range .Chart.Rows}}<g>
<text x="0" y="{{.TextY}}">{{.Label}}</text>
{{range .Segs}}<rect x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="18" fill="{{.Color}}"><title>{{.Title}}</title></rect>
{{if .Label}}<text class="seg" x="{{.LabelX}}" y="{{.TextY}}">{{.Label}}</text>
{{end}}{{end}}<text x="{{.CountX}}" y="{{.TextY}}">{{.Total}}</text>
</g>
{{end}}{{range .Chart.Legend}}<rect x="{{.X}}" y="{{$.Chart.LegendY}}" width="12" height="12" fill="{{.Color}}"></rect><text x="{{.TextX}}" y="{{$.Chart.LegendY}}" dy="10">{{.Label}}</text>
{{end}}</svg>
{{if .Collectors}}<details>
<summary>Collectors ({{len .Collectors}})</summary>
<table class="coll">
<tr><th>Collector</th><th>Status</th><th>Reason</th></tr>
{{range .Collectors}}<tr><td><code>{{.Name}}</code></td><td>{{.Status}}</td><td>{{.Reason}}</td></tr>
{{end}}</table>
</details>
{{end}}
<h2>Checks</h2>
<div class="filters" id="filters">
{{range .Statuses}}<label><input type="checkbox" data-filter-status value="{{.Status}}" checked> {{.Status}} ({{.Count}})</label>
{{end}}<label>Severity <select id="f-sev">
<option value="99">all</option>
{{range $i, $s := .Severities}}<option value="{{$i}}">{{$s}}{{if $i}} and above{{end}}</option>
{{end}}</select></label>
<label><input type="search" id="f-q" placeholder="Search id, title, message, control"></label>
<button type="button" id="f-open">Expand all</button>
<button type="button" id="f-close">Collapse all</button>
<span id="f-count" class="muted"></span>
</div>
<div id="checks">
{{range .Checks}}<details class="check {{.Status}}" data-status="{{.Filter}}" data-rank="{{.Rank}}"{{if .Open}} open{{end}}>
<summary><code>{{.ID}}</code> <span class="badge sev-{{.Severity}}">{{.Severity}}</span> <span class="badge st-{{.Status}}">{{.Filter}}</span><span class="title">{{.Title}}</span></summary>
<div class="body">
{{with .Description}}<p>{{.}}</p>
{{end}}{{if .Messages}}<h3>{{if eq .Status "skip"}}Reason{{else}}Messages{{end}}</h3>
<ul>
{{range .Messages}}<li>{{.}}</li>
{{end}}</ul>
{{end}}{{with .Waiver}}<h3>Waiver</h3>
<div class="waiver{{if .Expired}} expired{{end}}">
{{if .Expired}}<p><b>Expired: this waiver no longer applies.</b></p>
{{end}}<dl>
<dt>Approved by</dt><dd>{{.ApprovedBy}}</dd>
<dt>Expires</dt><dd>{{.Expires}}</dd>
<dt>Justification</dt><dd>{{.Justification}}</dd>
<dt>Target</dt><dd><code>{{.Target}}</code></dd>
<dt>Ticket</dt><dd>{{with .Ticket}}{{.}}{{else}}none{{end}}</dd>
{{with .Scope}}<dt>Scope</dt><dd>{{with .Kinds}}kinds {{range $i, $k := .}}{{if $i}}, {{end}}{{$k}}{{end}}{{end}}{{if and .Kinds .Hosts}}; {{end}}{{with .Hosts}}hosts {{range $i, $h := .}}{{if $i}}, {{end}}<code>{{$h}}</code>{{end}}{{end}}</dd>
{{end}}</dl>
</div>
{{end}}{{with .Remediation}}<h3>Remediation</h3>
<p>{{.}}</p>
{{end}}{{if .Controls}}<h3>Controls</h3>
<ul>
{{range .Controls}}<li>{{.Framework}}: {{.IDs}}</li>
{{end}}</ul>
{{end}}{{if or .Package .File}}<h3>Policy</h3>
<p><code>{{.Package}}</code>{{with .File}} in <code>{{.}}</code>{{end}}</p>
{{end}}</div>
</details>
{{end}}</div>
</main>
<script>
(function () {
  "use strict";
  var boxes = document.querySelectorAll("input[data-filter-status]");
  var sev = document.getElementById("f-sev");
  var q = document.getElementById("f-q");
  var count = document.getElementById("f-count");
  var checks = document.querySelectorAll("details.check");
  function apply() {
    var on = {};
    boxes.forEach(function (b) { on[b.value] = b.checked; });
    var maxRank = Number(sev.value);
    var text = q.value.trim().toLowerCase();
    var shown = 0;
    checks.forEach(function (el) {
      var ok = on[el.dataset.status] !== false &&
        Number(el.dataset.rank) <= maxRank &&
        (text === "" || el.textContent.toLowerCase().indexOf(text) >= 0);
      el.hidden = !ok;
      if (ok) { shown++; }
    });
    count.textContent = shown + " of " + checks.length + " shown";
  }
  function openAll(open) {
    checks.forEach(function (el) { if (!el.hidden) { el.open = open; } });
  }
  boxes.forEach(function (b) { b.addEventListener("change", apply); });
  sev.addEventListener("change", apply);
  q.addEventListener("input", apply);
  document.getElementById("f-open").addEventListener("click", function () { openAll(true); });
  document.getElementById("f-close").addEventListener("click", function () { openAll(false); });
  apply();
})();
</script>
</body>
</html>
`
