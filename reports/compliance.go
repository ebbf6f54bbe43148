package reports

// Control statuses: what a compliance profile's control comes to on one
// target. Only pass says the benchmark's requirement is met; every other
// status says why it is not known to be.
const (
	ControlPass = "pass"
	ControlFail = "fail"
	// ControlWaived: a check that decides the control failed and is waived.
	ControlWaived = "waived"
	// ControlError: a check that decides the control errored.
	ControlError = "error"
	// ControlNotEvaluated: some part of the control was judged by nothing,
	// because no gpuhost check decides it yet, or its check was skipped or
	// left out of the scan.
	ControlNotEvaluated = "not_evaluated"
	// ControlNotApplicable: every check that decides it does not apply to
	// the target (a live probe on an image).
	ControlNotApplicable = "not_applicable"
	// ControlManual: a reviewer checks it by hand; Manual says how.
	ControlManual = "manual"
	// ControlTailored: the profile sets the control aside for a reason, and
	// its compensating checks, if any, passed.
	ControlTailored = "tailored"
)

// ControlStatuses lists the control statuses in the order reports show
// them: the ones a reviewer acts on first.
var ControlStatuses = []string{ControlFail, ControlError, ControlNotEvaluated, ControlWaived, ControlManual, ControlTailored, ControlNotApplicable, ControlPass}

// Compliance is one compliance profile judged on the target: a
// benchmark's controls, each with the gpuhost checks and the
// ComplianceAsCode (XCCDF) rules it corresponds to.
type Compliance struct {
	// Profile is the profile's name (cis-ubuntu-22.04-l1-server) and Title
	// what it is called in full.
	Profile string `json:"profile"`
	Title   string `json:"title"`
	// Benchmark and Version name the benchmark the controls are numbered
	// by.
	Benchmark string `json:"benchmark"`
	Version   string `json:"version"`
	// XCCDFBenchmark and XCCDFProfile are the ids of the XCCDF benchmark
	// and profile whose rules XCCDFRules name, so that the results join
	// OpenSCAP's rule by rule.
	XCCDFBenchmark string `json:"xccdf_benchmark,omitempty"`
	XCCDFProfile   string `json:"xccdf_profile,omitempty"`
	// XCCDFRulePrefix turns a rule's short id into its XCCDF id.
	XCCDFRulePrefix string `json:"xccdf_rule_prefix,omitempty"`
	// Platform is the CPE of the platform the benchmark is written for.
	Platform string `json:"platform,omitempty"`
	// Summary counts the controls by status, Rules the XCCDF rules, and
	// Sections the controls of each of the benchmark's sections.
	Summary  map[string]int   `json:"summary"`
	Rules    map[string]int   `json:"rules"`
	Sections []SectionSummary `json:"sections"`
	Controls []Control        `json:"controls"`
}

// SectionSummary counts one section's controls by status.
type SectionSummary struct {
	ID       string         `json:"id"`
	Title    string         `json:"title"`
	ByStatus map[string]int `json:"by_status"`
}

// Control is one benchmark control's verdict.
type Control struct {
	ID    string `json:"id"`
	Title string `json:"title"`
	Level int    `json:"level" jsonschema:"minimum=1"`
	// Status is one of ControlStatuses; Reason says why it is not pass.
	Status string `json:"status" jsonschema:"enum=pass,enum=fail,enum=waived,enum=error,enum=not_evaluated,enum=not_applicable,enum=manual,enum=tailored"`
	Reason string `json:"reason,omitempty"`
	// Checks are the gpuhost checks that decide the control, each as the
	// profile names it ("GH-FS-003 /etc/shadow": the check, and the
	// subject of its findings that concerns the control).
	Checks     []string `json:"checks"`
	XCCDFRules []string `json:"xccdf_rules"`
	// Rules are the verdicts of the control's XCCDF rules, one by one.
	Rules []RuleResult `json:"rules"`
	// Findings are the findings of the control's checks that decided it.
	Findings []Finding `json:"findings,omitempty"`
	// Remediation is the first failing check's remediation.
	Remediation string `json:"remediation,omitempty"`
	// Manual is what a reviewer checks by hand, for a manual control.
	Manual string `json:"manual,omitempty"`
}

// RuleResult is one XCCDF rule's verdict: the same statuses as a control's.
type RuleResult struct {
	ID string `json:"id"`
	// Checks are the gpuhost checks that decide the rule, as the profile
	// names them.
	Checks []string `json:"checks,omitempty"`
	Status string   `json:"status" jsonschema:"enum=pass,enum=fail,enum=waived,enum=error,enum=not_evaluated,enum=not_applicable,enum=manual,enum=tailored"`
	Reason string   `json:"reason,omitempty"`
}
