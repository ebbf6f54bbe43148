//go:generate packer-sdc mapstructure-to-hcl2 -type Vulnerabilities

// Package evaluation is what the gpuhost Packer components that judge a
// target share: the gpuhost-gate post-processor, which scans the image a
// build made, and the gpuhost-scan provisioner, which scans the build
// instance. Both take these settings under the same names (squashed into
// their own configuration), compile them into a scan.Scanner the same way,
// write the reports the same way and reach the same verdict, so a template
// that moves from one to the other keeps its meaning.
package evaluation

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/internal/userfile"
	"github.com/gpuhost/gpuhost/render/report"
	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan"
	"github.com/gpuhost/gpuhost/scan/waivers"
)

// Vulnerabilities sets the CVE params of the policy pack (cve_fail_on,
// cve_grace_days, cve_ignore_unfixed, cve_max_db_age_days). Unset settings keep the params
// file's, or the pack's defaults.
type Vulnerabilities struct {
	// Fail on a CVE at this severity or above, once past the grace
	// period: `critical`, `high`, `medium` or `low`. Defaults to
	// `critical`.
	FailOn string `mapstructure:"fail_on"`
	// Days a CVE may stay unpatched, from its published date to the scan.
	// Defaults to 14.
	GraceDays *int `mapstructure:"grace_days"`
	// Leave CVEs with no fixed version out: nothing can be installed for
	// them. Defaults to true; false fails them too.
	IgnoreUnfixed *bool `mapstructure:"ignore_unfixed"`
	// Days the trivy DB may be old at the scan, from when it was built; an
	// older one fails the gate, since a clean match against it proves
	// nothing. Defaults to 7.
	MaxDBAgeDays *int `mapstructure:"max_db_age_days"`
}

// Params are the params the block sets.
func (v Vulnerabilities) Params() map[string]any {
	p := map[string]any{}
	if v.FailOn != "" {
		p["cve_fail_on"] = v.FailOn
	}
	if v.GraceDays != nil {
		p["cve_grace_days"] = *v.GraceDays
	}
	if v.IgnoreUnfixed != nil {
		p["cve_ignore_unfixed"] = *v.IgnoreUnfixed
	}
	if v.MaxDBAgeDays != nil {
		p["cve_max_db_age_days"] = *v.MaxDBAgeDays
	}
	return p
}

// Config is how a target is judged: the policy pack, its params and
// waivers, the thresholds that fail the build, and the reports. The
// gpuhost-gate post-processor and the gpuhost-scan provisioner take the
// same settings.
type Config struct {
	// Policy directories or OPA bundles (`.tar.gz`) that replace the
	// embedded policy pack. Empty: the embedded pack.
	Policy []string `mapstructure:"policy"`
	// Policy directories or bundles added to the pack in use.
	ExtendPolicy []string `mapstructure:"extend_policy"`
	// A public key (PEM file) that policy bundles must be signed with.
	VerificationKey string `mapstructure:"verification_key"`
	// The signing algorithm of verification_key. Defaults to the key's own:
	// `RS256` for RSA, `ES256`/`ES384`/`ES512` for ECDSA, `EdDSA` for Ed25519.
	VerificationAlg string `mapstructure:"verification_alg"`
	// A parameters file (YAML or JSON) read as `data.gpuhost.params`:
	// pins, allowed ports, expected GPU count. It is checked against the
	// pack's parameter schema.
	Params string `mapstructure:"params"`
	// A waiver file: a YAML list of `{id, target, justification,
	// approved_by, expires}`.
	Waivers string `mapstructure:"waivers"`
	// Fail the build when a check fails at this severity or above:
	// `critical`, `high`, `medium`, `low` or `info`. Defaults to `high`. A
	// scan that cannot be trusted (a check or collector error) always fails
	// the build.
	FailOn string `mapstructure:"fail_on"`
	// Also fail the build when a check at this severity or above could not
	// be evaluated (skipped for missing facts, or errored), so that a
	// target cannot pass on checks that never ran. Unset: skips never fail
	// it. Checks that do not apply to the target's kind are not counted.
	FailOnSkip string `mapstructure:"fail_on_skip"`
	// An offline trivy vulnerability DB directory (`trivy.db` and
	// `metadata.json`, as `trivy --download-db-only` leaves them) that the
	// target's OS packages are matched against on the build machine, as
	// `gpuhost --trivy-db` does. Never downloaded. Unset: no vulnerability
	// facts, so GH-SC-001 is skipped, which `fail_on_skip = "critical"`
	// turns into a failed build.
	TrivyDB string `mapstructure:"trivy_db"`
	// How GH-SC-001 judges the CVEs trivy_db finds. Each setting set here
	// replaces the params file's, so the template shows the threshold the
	// target is held to.
	Vulnerabilities Vulnerabilities `mapstructure:"vulnerabilities"`
	// The report formats written, one file per format, named as the top of
	// this page says and ending in the format's extension: `table` (.txt),
	// `json`, `sarif`, `junit` (.junit.xml), `markdown` (.md), `html`,
	// `github` (workflow commands, .github.txt), `tap` and `xccdf`
	// (.xccdf.xml).
	// Defaults to every format (`xccdf` only with `compliance`).
	Reports []string `mapstructure:"reports"`
	// A compliance profile of the pack to judge per control, such as
	// `cis-ubuntu-22.04-l1-server` (`gpuhost compliance list` names them):
	// every report gains its controls' verdicts, and the `xccdf` report
	// can be written. The build still passes or fails on the checks.
	Compliance string `mapstructure:"compliance"`
}

// ReportPath is where the report of format goes for a target named base,
// written by the component whose short name is kind ("gate", "scan"):
// `<base>.<kind>.<extension>`, the extension the format's renderer names.
// format is one Validate accepted.
func ReportPath(base, kind, format string) string {
	r, err := report.Lookup(format)
	if err != nil {
		panic(fmt.Sprintf("evaluation: ReportPath of a format Validate refuses: %v", err))
	}
	return reportPath(base, kind, r)
}

func reportPath(base, kind string, r report.Renderer) string {
	return base + "." + kind + "." + r.Ext()
}

// Defaults fills in the settings left unset.
func (c *Config) Defaults() {
	if c.FailOn == "" {
		c.FailOn = "high"
	}
	if len(c.Reports) == 0 {
		c.Reports = DefaultReports(c.Compliance)
	}
}

// DefaultReports are the formats written when reports is unset: every
// format, but xccdf only when a compliance profile is judged, since an
// XCCDF result is a profile's rules.
func DefaultReports(compliance string) []string {
	var out []string
	for _, f := range report.Formats() {
		if f != "xccdf" || compliance != "" {
			out = append(out, f)
		}
	}
	return out
}

// Validate lists every problem of the settings, each starting with the
// field it is about. Files the scanner opens later (params, waivers,
// policies) are read by Scanner, which names them when they fail.
func (c *Config) Validate() []string {
	var errs []string
	add := func(format string, args ...any) { errs = append(errs, fmt.Sprintf(format, args...)) }
	if c.FailOnSkip != "" && !reports.ValidSeverity(c.FailOnSkip) {
		add("fail_on_skip: %q is not one of %s", c.FailOnSkip, strings.Join(reports.Severities, ", "))
	}
	if !reports.ValidSeverity(c.FailOn) {
		add("fail_on: %q is not one of %s", c.FailOn, strings.Join(reports.Severities, ", "))
	}
	seen := map[string]bool{}
	for i, f := range c.Reports {
		switch {
		case !slices.Contains(report.Formats(), f):
			add("reports[%d]: %q is not one of %s", i, f, strings.Join(report.Formats(), ", "))
		case seen[f]:
			add("reports[%d]: %q is listed twice", i, f)
		case f == "xccdf" && c.Compliance == "":
			add("reports[%d]: xccdf needs compliance set: an XCCDF result is a profile's rules", i)
		}
		seen[f] = true
	}
	for _, f := range []struct {
		field string
		list  []string
	}{{"policy", c.Policy}, {"extend_policy", c.ExtendPolicy}} {
		for i, p := range f.list {
			if strings.TrimSpace(p) == "" {
				add("%s[%d]: empty path", f.field, i)
			}
		}
	}
	if c.TrivyDB != "" {
		if err := userfile.CheckDir(c.TrivyDB); err != nil {
			add("trivy_db: %s", err)
		}
	}
	switch v := c.Vulnerabilities; {
	case v.FailOn != "" && (!reports.ValidSeverity(v.FailOn) || v.FailOn == "info"):
		add("vulnerabilities.fail_on: %q is not one of critical, high, medium, low", v.FailOn)
	case v.GraceDays != nil && *v.GraceDays < 0:
		add("vulnerabilities.grace_days: %d is negative", *v.GraceDays)
	case v.MaxDBAgeDays != nil && *v.MaxDBAgeDays < 0:
		add("vulnerabilities.max_db_age_days: %d is negative", *v.MaxDBAgeDays)
	}
	if len(c.Vulnerabilities.Params()) > 0 && c.TrivyDB == "" {
		add("vulnerabilities: set, but no trivy_db to match the target's packages against")
	}
	if c.VerificationKey != "" && len(c.Policy)+len(c.ExtendPolicy) == 0 {
		add("verification_key: set, but no policy or extend_policy bundle to verify")
	}
	return errs
}

// Thresholds are the settings that decide the verdict.
func (c *Config) Thresholds() scan.Thresholds {
	return scan.Thresholds{FailOn: c.FailOn, FailOnSkip: c.FailOnSkip}
}

// Scanner compiles the policy pack the settings name, the way the CLI's
// --policy, --extend-policy, --params and --waivers do, so that a broken
// policy or params file fails at configure time (`packer validate`), not
// after a bake.
func (c *Config) Scanner(ctx context.Context) (*scan.Scanner, error) {
	pack := scan.Pack{Policies: c.Policy, Extend: c.ExtendPolicy, Params: c.Params,
		VerificationKey: c.VerificationKey, VerificationAlg: c.VerificationAlg,
		Set: c.Vulnerabilities.Params(), SetBy: "the vulnerabilities block"}
	e, err := pack.Engine(ctx)
	if err != nil {
		return nil, err
	}
	var sopts []scan.Option
	if c.Waivers != "" {
		// A pack that is verified takes only waivers signed with the same
		// key, as the CLI does.
		key, err := pack.BundleKey()
		if err != nil {
			return nil, err
		}
		var list []waivers.Waiver
		if key == nil {
			list, err = waivers.Load(c.Waivers)
		} else {
			list, err = waivers.LoadVerified(c.Waivers, waivers.Key{PEM: key.PEM, Algorithm: key.Algorithm})
		}
		if err != nil {
			return nil, err
		}
		sopts = append(sopts, scan.WithWaivers(list))
	}
	if c.Compliance != "" {
		p, err := scan.ComplianceProfile(e, c.Compliance)
		if err != nil {
			return nil, fmt.Errorf("compliance: %w", err)
		}
		sopts = append(sopts, scan.WithCompliance(p))
	}
	sopts = append(sopts, scan.WithJudgement(c.Thresholds(), nil, nil))
	return scan.New(e, sopts...), nil
}

// WriteReports writes one report per configured format, atomically, to
// ReportPath(base, kind, format), and returns the paths written.
func (c *Config) WriteReports(base, kind string, rep *reports.Report) ([]string, error) {
	var paths []string
	for _, format := range c.Reports {
		r, err := report.Lookup(format)
		if err != nil {
			return paths, err
		}
		path := reportPath(base, kind, r)
		if err := report.WriteFile(path, r, rep); err != nil {
			return paths, err
		}
		paths = append(paths, path)
	}
	return paths, nil
}

// Verdict is nil when rep passes th. Otherwise its error says why, worded
// to follow the name of what was scanned ("disk.raw fails policy at or
// above high").
func Verdict(rep *reports.Report, th scan.Thresholds) error {
	switch scan.ExitCode([]*reports.Report{rep}, th) {
	case scan.ExitUntrusted:
		return errors.New("cannot be trusted: a check or collector errored")
	case scan.ExitFail:
		if rep.Failed(th.FailOn) {
			return fmt.Errorf("fails policy at or above %s", th.FailOn)
		}
		return fmt.Errorf("has checks at or above %s that could not be evaluated (fail_on_skip)", th.FailOnSkip)
	}
	return nil
}

// Say prints the summary and every result that blocks the build, each line
// starting with the component's name.
func Say(ui packersdk.Ui, component string, rep *reports.Report, th scan.Thresholds) {
	s, c := rep.Summary, rep.Coverage
	ui.Say(fmt.Sprintf("%s: %d checks: %d failed, %d errors, %d waived, %d skipped, %d passed (fail_on %s); %d of %d applicable checks evaluated",
		component, s.Total, s.ByStatus[reports.StatusFail], s.ByStatus[reports.StatusError], s.ByStatus[reports.StatusWaived],
		s.ByStatus[reports.StatusSkip], s.ByStatus[reports.StatusPass], th.FailOn, c.Evaluated, c.Checks))
	for _, r := range rep.Results {
		if !th.Blocks(r) {
			continue
		}
		msg := fmt.Sprintf("%s: %s %s %s: %s", component, r.Status, r.Severity, r.ID, r.Title)
		if len(r.Messages) > 0 {
			msg += " (" + strings.Join(r.Messages, "; ") + ")"
		}
		ui.Error(msg)
	}
	for name, c := range rep.Collectors {
		if c.Status == facts.StatusError {
			ui.Error(fmt.Sprintf("%s: collector %s failed: %s", component, name, c.Reason))
		}
	}
}
