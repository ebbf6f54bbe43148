package reports

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/url"
	"sort"
	"strings"
)

const (
	sarifSchema  = "https://json.schemastore.org/sarif-2.1.0.json"
	sarifVersion = "2.1.0"
	toolInfoURI  = "https://github.com/gpuhost/gpuhost"
)

type sarif struct{}

var _ Renderer = (*sarif)(nil)

func init() { register(&sarif{}) }

func (*sarif) Format() string { return "sarif" }

// The SARIF object model, as much of it as we emit. Field order follows the
// spec's examples so the output reads naturally.
type (
	sarifLog struct {
		Schema  string     `json:"$schema"`
		Version string     `json:"version"`
		Runs    []sarifRun `json:"runs"`
	}
	sarifRun struct {
		Tool              sarifTool              `json:"tool"`
		AutomationDetails sarifAutomationDetails `json:"automationDetails"`
		Invocations       []sarifInvocation      `json:"invocations"`
		Results           []sarifResult          `json:"results"`
		Properties        map[string]string      `json:"properties,omitempty"`
	}
	sarifTool struct {
		Driver sarifDriver `json:"driver"`
	}
	sarifDriver struct {
		Name           string      `json:"name"`
		Version        string      `json:"version,omitempty"`
		InformationURI string      `json:"informationUri"`
		Rules          []sarifRule `json:"rules"`
	}
	sarifRule struct {
		ID                   string             `json:"id"`
		Name                 string             `json:"name"`
		ShortDescription     sarifText          `json:"shortDescription"`
		FullDescription      sarifText          `json:"fullDescription"`
		Help                 sarifHelp          `json:"help"`
		DefaultConfiguration sarifConfiguration `json:"defaultConfiguration"`
		Properties           sarifRuleProps     `json:"properties"`
	}
	sarifText struct {
		Text string `json:"text"`
	}
	sarifHelp struct {
		Text     string `json:"text"`
		Markdown string `json:"markdown"`
	}
	sarifConfiguration struct {
		Level string `json:"level"`
	}
	sarifRuleProps struct {
		Tags             []string `json:"tags"`
		SecuritySeverity string   `json:"security-severity"`
		Precision        string   `json:"precision"`
	}
	sarifAutomationDetails struct {
		ID string `json:"id"`
	}
	sarifInvocation struct {
		ExecutionSuccessful bool `json:"executionSuccessful"`
		// ToolExecutionNotifications name every applicable check that
		// reached no verdict, so code scanning shows what was not judged.
		ToolExecutionNotifications []sarifNotification `json:"toolExecutionNotifications,omitempty"`
		Properties                 map[string]any      `json:"properties,omitempty"`
	}
	sarifNotification struct {
		Level          string       `json:"level"`
		Message        sarifText    `json:"message"`
		AssociatedRule sarifRuleRef `json:"associatedRule"`
	}
	sarifRuleRef struct {
		ID    string `json:"id"`
		Index int    `json:"index"`
	}
	sarifResult struct {
		RuleID              string             `json:"ruleId"`
		RuleIndex           int                `json:"ruleIndex"`
		Level               string             `json:"level"`
		Message             sarifText          `json:"message"`
		Locations           []sarifLocation    `json:"locations"`
		PartialFingerprints map[string]string  `json:"partialFingerprints"`
		Suppressions        []sarifSuppression `json:"suppressions,omitempty"`
		Properties          map[string]string  `json:"properties"`
	}
	sarifLocation struct {
		PhysicalLocation sarifPhysical  `json:"physicalLocation"`
		LogicalLocations []sarifLogical `json:"logicalLocations"`
	}
	sarifPhysical struct {
		ArtifactLocation sarifArtifact `json:"artifactLocation"`
		Region           *sarifRegion  `json:"region,omitempty"`
	}
	sarifArtifact struct {
		URI string `json:"uri"`
	}
	sarifRegion struct {
		StartLine int `json:"startLine"`
	}
	sarifLogical struct {
		Name               string `json:"name"`
		FullyQualifiedName string `json:"fullyQualifiedName"`
		Kind               string `json:"kind"`
	}
	sarifSuppression struct {
		Kind          string `json:"kind"`
		Status        string `json:"status"`
		Justification string `json:"justification"`
	}
)

func (*sarif) Render(w io.Writer, rep *Report) error {
	// One rule per check id, every check included so the catalogue is
	// complete even for rules that passed. The first result of an id wins.
	byID := map[string]Result{}
	for _, res := range rep.Results {
		if _, ok := byID[res.ID]; !ok {
			byID[res.ID] = res
		}
	}
	ids := make([]string, 0, len(byID))
	for id := range byID {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	index := make(map[string]int, len(ids))
	rules := make([]sarifRule, 0, len(ids))
	for i, id := range ids {
		index[id] = i
		rules = append(rules, sarifRuleFor(byID[id]))
	}

	results := []sarifResult{}
	for _, res := range rep.Results {
		if res.Status != StatusFail && res.Status != StatusError && res.Status != StatusWaived {
			continue
		}
		results = append(results, sarifResultFor(rep, res, index[res.ID]))
	}

	var notes []sarifNotification
	for _, res := range rep.Results {
		if !res.Unevaluated() {
			continue
		}
		level := "note"
		switch {
		case res.Status == StatusError:
			level = "error"
		case SeverityRank(res.Severity) <= SeverityRank(gapSeverity):
			level = "warning"
		}
		notes = append(notes, sarifNotification{
			Level:          level,
			Message:        sarifText{Text: res.ID + " (" + res.Severity + ") " + res.Status + ": " + strings.Join(res.Messages, "; ")},
			AssociatedRule: sarifRuleRef{ID: res.ID, Index: index[res.ID]},
		})
	}
	cov := coverageOf(rep)

	props := map[string]string{}
	if rep.FactsDigest != "" {
		props["facts_digest"] = rep.FactsDigest
	}
	if rep.PolicyDigest != "" {
		props["policy_digest"] = rep.PolicyDigest
	}
	log := sarifLog{
		Schema:  sarifSchema,
		Version: sarifVersion,
		Runs: []sarifRun{{
			Tool: sarifTool{Driver: sarifDriver{
				Name:           "gpuhost",
				Version:        rep.ToolVersion,
				InformationURI: toolInfoURI,
				Rules:          rules,
			}},
			AutomationDetails: sarifAutomationDetails{ID: "gpuhost/" + rep.Target.Kind + "/"},
			// An errored check means the scan cannot be trusted as a whole.
			Invocations: []sarifInvocation{{
				ExecutionSuccessful:        !rep.Errored(),
				ToolExecutionNotifications: notes,
				Properties:                 map[string]any{"coverage": coverageLine(cov)},
			}},
			Results:    results,
			Properties: props,
		}},
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(log)
}

func sarifRuleFor(res Result) sarifRule {
	desc := res.Description
	if desc == "" {
		desc = res.Title
	}
	help := res.Remediation
	if help == "" {
		help = "No remediation is given for this check."
	}
	tags := append([]string{"security", "gpuhost", res.Domain()}, controlTags(res.Controls)...)
	score, ok := sarifSeverityScores[res.Severity]
	if !ok {
		score = sarifSeverityScores["info"]
	}
	return sarifRule{
		ID:                   res.ID,
		Name:                 res.Title,
		ShortDescription:     sarifText{Text: res.Title},
		FullDescription:      sarifText{Text: desc},
		Help:                 sarifHelp{Text: help, Markdown: help},
		DefaultConfiguration: sarifConfiguration{Level: severityLevel(res.Severity)},
		Properties: sarifRuleProps{
			Tags:             tags,
			SecuritySeverity: score,
			Precision:        "high",
		},
	}
}

func sarifResultFor(rep *Report, res Result, ruleIndex int) sarifResult {
	level := severityLevel(res.Severity)
	if res.Status == StatusError {
		level = "error"
	}
	text := strings.Join(res.Messages, "; ")
	if text == "" {
		text = res.Title
	}

	uri, line := targetURI(rep.Target.Ref), 0
	for _, msg := range res.Messages {
		if p, l, ok := messageLocation(msg); ok {
			uri, line = pathURI(p), l
			break
		}
	}
	loc := sarifLocation{
		PhysicalLocation: sarifPhysical{ArtifactLocation: sarifArtifact{URI: uri}},
		LogicalLocations: []sarifLogical{{
			Name:               rep.Target.Ref,
			FullyQualifiedName: rep.Target.Kind + ":" + rep.Target.Ref,
			Kind:               rep.Target.Kind,
		}},
	}
	if line > 0 {
		loc.PhysicalLocation.Region = &sarifRegion{StartLine: line}
	}

	out := sarifResult{
		RuleID:    res.ID,
		RuleIndex: ruleIndex,
		Level:     level,
		Message:   sarifText{Text: text},
		Locations: []sarifLocation{loc},
		// A fingerprint of what failed where lets code scanning follow one
		// finding across runs even though the files are not in the repo.
		PartialFingerprints: map[string]string{"gpuhostFinding/v1": fingerprint(rep.Target.Kind, rep.Target.Ref, res.ID, text)},
		Properties:          map[string]string{"status": res.Status, "severity": res.Severity},
	}
	if w := res.Waiver; w != nil && w.Expired {
		// A property, not the message: the message feeds the fingerprint,
		// and a lapsed waiver does not make it another finding.
		out.Properties["expiredWaiver"] = expiredWaiverLine(w)
	}
	if res.Status == StatusWaived {
		j := "waived"
		if w := res.Waiver; w != nil {
			j = w.Justification + " (approved by " + w.ApprovedBy + ", expires " + w.Expires + waiverRefs(w) + ")"
		}
		out.Suppressions = []sarifSuppression{{Kind: "external", Status: "accepted", Justification: j}}
	}
	return out
}

// severityLevel maps a severity onto SARIF's three result levels.
func severityLevel(sev string) string {
	switch sev {
	case "critical", "high":
		return "error"
	case "medium":
		return "warning"
	default:
		return "note"
	}
}

// pathURI turns a file path into a URI reference, escaping what a URI
// cannot hold.
func pathURI(p string) string {
	u := url.URL{Path: p}
	return u.String()
}

// targetURI is the artifact a result without a file points at: the scanned
// target itself.
func targetURI(ref string) string {
	if ref == "" {
		return "."
	}
	return pathURI(ref)
}

func fingerprint(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}
