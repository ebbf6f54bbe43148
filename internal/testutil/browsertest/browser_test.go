package browsertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/policy/catalog"
	"github.com/gpuhost/gpuhost/render"
	catalogdoc "github.com/gpuhost/gpuhost/render/catalog"
	"github.com/gpuhost/gpuhost/render/report"
	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan"
	"github.com/gpuhost/gpuhost/scan/waivers"
	"github.com/gpuhost/gpuhost/target"
)

// chromium is Debian's package; CI installs it, so there a missing binary is
// a failure rather than a skip.
const chromium = "/usr/bin/chromium"

// budget bounds everything one test does in the browser, its start
// included; a full-page capture of the catalog alone takes seconds.
const budget = 90 * time.Second

// browser starts a headless Chromium for one test, or skips the test where
// there is none and CI is not set.
func browser(t *testing.T) context.Context {
	t.Helper()
	if _, err := os.Stat(chromium); err != nil {
		if os.Getenv("CI") == "" {
			t.Skipf("no %s (install Debian's chromium package); under CI this fails", chromium)
		}
		t.Fatalf("CI is set and %s is missing: %v", chromium, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	t.Cleanup(cancel)
	// Without the background-networking flags Chromium keeps dialling
	// Google services, which a closed network refuses.
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromium),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	t.Cleanup(cancelBrowser)
	return bctx
}

// consoleErrors collects every console error, uncaught exception, browser
// log error (a CSP violation, a failed load) and dialog of a page.
type consoleErrors struct {
	mu   sync.Mutex
	list []string
}

func (c *consoleErrors) add(s string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.list = append(c.list, s)
}

func (c *consoleErrors) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.list)
}

// listen subscribes to the tab's console (console API calls, uncaught
// exceptions, browser log entries) and to its dialogs. Call it before the
// page loads.
func (c *consoleErrors) listen(t *testing.T, tab context.Context) {
	t.Helper()
	messages := chromedp.Console(tab)
	go func() {
		// Ends when the tab's context is cancelled at cleanup.
		for m, err := range messages {
			if err != nil {
				return
			}
			if m.Type == chromedp.ConsoleError || m.IsException() {
				c.add(fmt.Sprintf("%s (%s %s:%d)", m, m.Source, m.URL, m.Line))
			}
		}
	}()
	err := chromedp.Listen(tab, func(ev any) {
		if d, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			c.add("dialog " + string(d.Type) + ": " + d.Message)
			// Dismiss it from another goroutine (Listen's func must not run
			// commands), or the page hangs until the budget runs out.
			go func() {
				_, _ = chromedp.Call(tab, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: false})
			}()
		}
	})
	if err != nil {
		t.Fatalf("listening to the tab: %v", err)
	}
}

// open loads a file in a fresh tab and returns the tab and the collector of
// its errors. The listeners are in place before the page loads.
func open(t *testing.T, bctx context.Context, file string) (context.Context, *consoleErrors) {
	t.Helper()
	tab, cancel := chromedp.NewContext(bctx)
	t.Cleanup(cancel)
	errs := &consoleErrors{}
	errs.listen(t, tab)
	if err := chromedp.Do(tab, chromedp.Navigate("file://"+file), chromedp.WaitReady(chromedp.CSS("body"))); err != nil {
		t.Fatalf("loading %s: %v", file, err)
	}
	return tab, errs
}

// screenshot saves a full-page PNG of the tab.
func screenshot(t *testing.T, tab context.Context, name string) {
	t.Helper()
	dir := os.Getenv("GPUHOST_SCREENSHOTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// From the top: the sticky filter bar otherwise lands wherever the
	// last check scrolled to, over the rows, in a full-page capture.
	if _, err := chromedp.Run(tab, chromedp.Evaluate[bool](`window.scrollTo(0, 0), true`)); err != nil {
		t.Fatalf("scrolling to the top: %v", err)
	}
	// Quality 100 asks for PNG; anything less is JPEG.
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("screenshot %s is not a PNG", name)
	}
	path := filepath.Join(dir, name+".png")
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

func noErrors(t *testing.T, what string, errs *consoleErrors) {
	t.Helper()
	// Console events arrive asynchronously; a short settle lets a late
	// one land before the verdict.
	time.Sleep(200 * time.Millisecond)
	for _, e := range errs.all() {
		t.Errorf("%s: %s", what, e)
	}
}

// evalJSON runs a script that returns JSON.stringify(...) and decodes it.
func evalJSON(t *testing.T, tab context.Context, script string, out any) {
	t.Helper()
	s, err := chromedp.Run(tab, chromedp.Evaluate[string](script))
	if err != nil {
		t.Fatalf("evaluating %q: %v", script, err)
	}
	if err := json.Unmarshal([]byte(s), out); err != nil {
		t.Fatalf("decoding %s: %v", s, err)
	}
}

// box is an element's bounding box and whether it can be seen at all.
type box struct {
	X, Y, W, H   float64
	ViewW, ViewH float64
	Shown        bool
	Found        bool
	TextContent  string `json:"text"`
}

// boxOf scrolls the first element matching selector into view and measures it.
func boxOf(t *testing.T, tab context.Context, selector string) box {
	t.Helper()
	var b box
	evalJSON(t, tab, fmt.Sprintf(`(function(){
  var el = document.querySelector(%q);
  if (!el) { return JSON.stringify({Found:false}); }
  el.scrollIntoView({block:"center"});
  var r = el.getBoundingClientRect();
  var st = getComputedStyle(el);
  return JSON.stringify({Found:true, X:r.x, Y:r.y, W:r.width, H:r.height,
    ViewW:innerWidth, ViewH:innerHeight,
    Shown: el.getClientRects().length > 0 && st.visibility !== "hidden" && st.display !== "none" && Number(st.opacity) > 0,
    text: el.textContent.slice(0, 200)});
})()`, selector), &b)
	return b
}

// visibleInViewport: shown, not empty, and on screen; an element taller
// than the viewport needs only to cross it.
func visibleInViewport(b box) bool {
	return b.Found && b.Shown && b.W > 0 && b.H > 0 &&
		b.X >= 0 && b.X+b.W <= b.ViewW+1 && b.Y < b.ViewH && b.Y+b.H > 0 &&
		(b.H > b.ViewH || b.Y >= 0)
}

// weakReport scans the weak sample rootfs through the real pipeline, then
// waives one of its failures with a waiver scoped to the sample's kind and
// hostname, so that the page shows a waived check too. It returns the
// report and the waived check's id.
func weakReport(t *testing.T) (*reports.Report, string) {
	t.Helper()
	ctx := context.Background()
	e := embeddedEngine(t)
	f, err := target.Rootfs(ctx, filepath.Join("..", "..", "..", "cmd", "gpuhost", "testdata", "rootfs-weak"), target.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := scan.New(e).Facts(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	var waived string
	for _, r := range rep.Results {
		if r.Status == reports.StatusFail {
			waived = r.ID // the last failure; the others stay failing
		}
	}
	list, err := waivers.Parse([]byte(`
- id: `+waived+`
  target: "*"
  justification: accepted on the lab image until the hardening sprint
  approved_by: security@example.com
  expires: 2099-12-31
  ticket: SEC-1234
  scope: {kinds: [rootfs, image], hosts: ["gpu-sample-*"]}
`), "waivers.yaml")
	if err != nil {
		t.Fatal(err)
	}
	waivers.ApplyTarget(rep.Results, list, rep.Target, time.Now())
	rep.Summarize()
	return rep, waived
}

// embeddedEngine compiles the pack the binary ships.
func embeddedEngine(t *testing.T) *engine.Engine {
	t.Helper()
	e, err := scan.Pack{}.Engine(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func writeReport(t *testing.T, rep *reports.Report) string {
	t.Helper()
	r, err := report.Lookup("html")
	if err != nil {
		t.Fatal(err)
	}
	return writePage(t, r, rep, "report.html")
}

// writeCatalog writes the catalog's HTML page and returns its file.
func writeCatalog(t *testing.T, cat *catalog.Catalog, name string) string {
	t.Helper()
	r, err := catalogdoc.Lookup("html")
	if err != nil {
		t.Fatal(err)
	}
	return writePage(t, r, cat, name)
}

// writePage renders doc with r into a temporary file called name and
// returns the file.
func writePage[D any](t *testing.T, r render.Renderer[D], doc D, name string) string {
	t.Helper()
	var buf bytes.Buffer
	if err := r.Render(&buf, doc); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return file
}

func TestReportInChromium(t *testing.T) {
	bctx := browser(t)
	rep, waived := weakReport(t)
	var failing []string
	for _, r := range rep.Results {
		if r.Status == reports.StatusFail {
			failing = append(failing, r.ID)
		}
	}
	if len(failing) == 0 {
		t.Fatal("the weak rootfs fails nothing; the test would prove nothing")
	}
	tab, errs := open(t, bctx, writeReport(t, rep))
	screenshot(t, tab, "report")

	if b := boxOf(t, tab, `svg[role="img"]`); !visibleInViewport(b) {
		t.Errorf("summary chart not visible in the viewport: %+v", b)
	}
	var segs int
	evalJSON(t, tab, `JSON.stringify(document.querySelectorAll('svg[role="img"] rect[width]:not([width="0"])').length)`, &segs)
	if segs < 2 {
		t.Errorf("summary chart has %d drawn segments", segs)
	}

	// Every failing check has a visible row, and the first is on screen
	// when scrolled to.
	var shownFail []string
	evalJSON(t, tab, `JSON.stringify(Array.from(document.querySelectorAll("details.check.fail"))
  .filter(function(el){ return !el.hidden && el.getClientRects().length > 0; })
  .map(function(el){ return el.querySelector("summary code").textContent; }))`, &shownFail)
	slices.Sort(shownFail)
	want := slices.Clone(failing)
	slices.Sort(want)
	if !slices.Equal(shownFail, want) {
		t.Errorf("visible failing rows %v, want %v", shownFail, want)
	}
	if b := boxOf(t, tab, `details.check.fail summary`); !visibleInViewport(b) || !strings.Contains(b.TextContent, failing[0]) {
		t.Errorf("first failing check %s not visible: %+v", failing[0], b)
	}

	// The waived check shows its ticket and approver once opened.
	if n := countRows(t, tab, ".waived"); n != 1 {
		t.Fatalf("%d waived rows, want 1 (%s, by a scoped waiver)", n, waived)
	}
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`details.check.waived summary`))); err != nil {
		t.Fatalf("opening the waived check: %v", err)
	}
	if b := boxOf(t, tab, `details.check.waived .waiver`); !visibleInViewport(b) ||
		!strings.Contains(b.TextContent, "SEC-1234") || !strings.Contains(b.TextContent, "security@example.com") {
		t.Errorf("waiver of the waived check not visible: %+v", b)
	}

	// The filter: a search hides rows that do not match; unticking "fail"
	// hides every failure.
	total := countRows(t, tab, "")
	if err := chromedp.Do(tab, chromedp.SendKeys(chromedp.ID("f-q"), "gh-ssh")); err != nil {
		t.Fatalf("typing a filter: %v", err)
	}
	shown := countRows(t, tab, ":not([hidden])")
	var mismatched int
	evalJSON(t, tab, `JSON.stringify(Array.from(document.querySelectorAll("details.check:not([hidden])"))
  .filter(function(el){ return el.textContent.toLowerCase().indexOf("gh-ssh") < 0; }).length)`, &mismatched)
	if shown == 0 || shown >= total || mismatched != 0 {
		t.Errorf("search gh-ssh: %d of %d rows shown, %d not matching", shown, total, mismatched)
	}
	counter, err := chromedp.Run(tab, chromedp.Text(chromedp.ID("f-count")))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("%d of %d shown", shown, total); counter != want {
		t.Errorf("filter counter %q, want %q", counter, want)
	}
	screenshot(t, tab, "report-filtered")
	if _, err := chromedp.Run(tab, chromedp.Evaluate[bool](`(function(){
  var q = document.getElementById("f-q");
  q.value = "";
  return q.dispatchEvent(new Event("input"));
})()`)); err != nil {
		t.Fatalf("clearing the search: %v", err)
	}
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`input[data-filter-status][value="fail"]`))); err != nil {
		t.Fatalf("unticking fail: %v", err)
	}
	if n := countRows(t, tab, ".fail:not([hidden])"); n != 0 {
		t.Errorf("%d failing rows still shown with fail unticked", n)
	}
	if n := countRows(t, tab, ":not([hidden])"); n != total-len(failing) {
		t.Errorf("%d rows shown with fail unticked, want %d", n, total-len(failing))
	}
	// Each kind of skip has a box of its own, and its rows follow it.
	notApplicable := countRows(t, tab, `[data-status="skip: not applicable"]`)
	if notApplicable == 0 {
		t.Error("no row is a skip that does not apply")
	}
	if err := chromedp.Do(tab, chromedp.Click(chromedp.CSS(`input[data-filter-status][value="skip: not applicable"]`))); err != nil {
		t.Fatalf("unticking skip: not applicable: %v", err)
	}
	if n := countRows(t, tab, ":not([hidden])"); n != total-len(failing)-notApplicable {
		t.Errorf("%d rows shown with fail and skip: not applicable unticked, want %d", n, total-len(failing)-notApplicable)
	}
	noErrors(t, "report", errs)
}

// TestHostileReportInChromium renders render/report's golden input,
// whose titles, messages and waivers carry markup and script: the page must
// stay inert (no dialog, no console error, the CSP never tripped).
func TestHostileReportInChromium(t *testing.T) {
	bctx := browser(t)
	data, err := os.ReadFile(filepath.Join("..", "..", "..", "render", "report", "testdata", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep reports.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	rep.Summarize()
	tab, errs := open(t, bctx, writeReport(t, &rep))
	screenshot(t, tab, "report-hostile")
	if b := boxOf(t, tab, `svg[role="img"]`); !visibleInViewport(b) {
		t.Errorf("summary chart not visible: %+v", b)
	}
	var scripts int
	evalJSON(t, tab, `JSON.stringify(document.scripts.length)`, &scripts)
	if scripts != 1 {
		t.Errorf("%d scripts in the page, want the report's own", scripts)
	}
	if n := countRows(t, tab, ".fail:not([hidden])"); n != rep.Summary.ByStatus[reports.StatusFail] {
		t.Errorf("%d failing rows shown, want %d", n, rep.Summary.ByStatus[reports.StatusFail])
	}
	noErrors(t, "hostile report", errs)
}

func countRows(t *testing.T, tab context.Context, suffix string) int {
	t.Helper()
	var n int
	evalJSON(t, tab, fmt.Sprintf(`JSON.stringify(document.querySelectorAll(%q).length)`, "details.check"+suffix), &n)
	return n
}

func TestCatalogInChromium(t *testing.T) {
	bctx := browser(t)
	e := embeddedEngine(t)
	tab, errs := open(t, bctx, writeCatalog(t, catalog.New(e), "catalog.html"))
	screenshot(t, tab, "catalog")

	if b := boxOf(t, tab, "h1"); !visibleInViewport(b) {
		t.Errorf("catalog heading not visible: %+v", b)
	}
	text, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range e.Checks() {
		if !strings.Contains(text, c.ID) {
			t.Errorf("check %s not shown in the catalog", c.ID)
		}
	}
	if b := boxOf(t, tab, "table"); !visibleInViewport(b) {
		t.Errorf("no visible table in the catalog: %+v", b)
	}
	noErrors(t, "catalog", errs)
}

// TestHostileCatalogInChromium renders a catalog whose every check carries
// one of testutil.Hostile as its id, title, description, remediation,
// targets, controls and parameter: the page must stay inert (no script, no
// image, no dialog, no console error) and show the markup as text.
func TestHostileCatalogInChromium(t *testing.T) {
	bctx := browser(t)
	cat := &catalog.Catalog{Params: map[string]any{}}
	for i, text := range testutil.Hostile {
		cat.Entries = append(cat.Entries, catalog.Entry{
			Check: engine.Check{ID: fmt.Sprintf("EX-%03d %s", i, text), Title: text, Description: text, Severity: "high",
				Remediation: text, Controls: map[string][]string{text: {text}}, Targets: []string{text},
				Requires: []string{text}, Package: text, File: text},
			Params: []string{text},
		})
		cat.Params[text] = text
	}
	tab, errs := open(t, bctx, writeCatalog(t, cat, "catalog-hostile.html"))
	var counts struct{ Scripts, Images, Headings, Checks int }
	evalJSON(t, tab, `JSON.stringify({Scripts: document.scripts.length, Images: document.images.length,
		Headings: document.querySelectorAll("h1").length, Checks: document.querySelectorAll("div.check").length})`, &counts)
	if counts.Scripts != 0 || counts.Images != 0 || counts.Headings != 1 || counts.Checks != len(testutil.Hostile) {
		t.Errorf("the page has %+v; want no script or image, its one h1 and a check each", counts)
	}
	text, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.body.innerText`))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "</td></tr></table><h1>injected</h1>"} {
		if !strings.Contains(text, want) {
			t.Errorf("the page does not show %q as text", want)
		}
	}
	noErrors(t, "hostile catalog", errs)
}

// TestHarnessSeesErrors proves the listeners work: a page that logs an
// error, throws, trips its CSP and opens a dialog is caught on every count.
func TestHarnessSeesErrors(t *testing.T) {
	bctx := browser(t)
	file := filepath.Join(t.TempDir(), "bad.html")
	page := `<!DOCTYPE html><html><head>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; script-src 'unsafe-inline'">
</head><body><p>bad</p><img src="https://example.invalid/x.png">
<script>console.error("boom"); alert("hi"); setTimeout(function () { throw new Error("thrown"); }, 0);</script>
</body></html>`
	if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errs := open(t, bctx, file)
	deadline := time.Now().Add(10 * time.Second)
	want := []string{"boom", "dialog alert: hi", "thrown", "Content Security Policy"}
	for {
		got := strings.Join(errs.all(), "\n")
		missing := slices.DeleteFunc(slices.Clone(want), func(w string) bool { return strings.Contains(got, w) })
		if len(missing) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the harness missed %q; it saw:\n%s", missing, got)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
