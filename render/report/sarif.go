package report

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpuhost/gpuhost/reports"
)

const (
	sarifSchema  = "https://json.schemastore.org/sarif-2.1.0.json"
	sarifVersion = "2.1.0"
	toolInfoURI  = "https://github.com/gpuhost/gpuhost"
)

type sarif struct{}

var _ Merger = (*sarif)(nil)

func (*sarif) Format() string { return "sarif" }

// Ext is the ending of a sarif report file.
func (*sarif) Ext() string { return "sarif" }

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
		// OriginalURIBaseIDs says where IMAGEROOT, the scanned root that
		// every artifact URI is relative to, was on the machine that scanned.
		OriginalURIBaseIDs map[string]sarifBase `json:"originalUriBaseIds"`
		Invocations        []sarifInvocation    `json:"invocations"`
		Results            []sarifResult        `json:"results"`
		Properties         map[string]string    `json:"properties,omitempty"`
	}
	sarifBase struct {
		URI         string    `json:"uri,omitempty"`
		Description sarifText `json:"description"`
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
		Level          string        `json:"level"`
		Message        sarifText     `json:"message"`
		AssociatedRule *sarifRuleRef `json:"associatedRule,omitempty"`
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
		RelatedLocations    []sarifRelated     `json:"relatedLocations,omitempty"`
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
		URI       string `json:"uri"`
		URIBaseID string `json:"uriBaseId,omitempty"`
	}
	sarifRegion struct {
		StartLine int `json:"startLine"`
	}
	sarifRelated struct {
		ID               int           `json:"id"`
		PhysicalLocation sarifPhysical `json:"physicalLocation"`
		Message          sarifText     `json:"message"`
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

func (s *sarif) Render(w io.Writer, rep *reports.Report) error {
	return s.RenderAll(w, []*reports.Report{rep})
}

// RenderAll writes one SARIF log with a run per report: code scanning
// takes a run per host, each with its own automation category, where logs
// written back to back would not parse.
func (*sarif) RenderAll(w io.Writer, reps []*reports.Report) error {
	log := sarifLog{Schema: sarifSchema, Version: sarifVersion, Runs: make([]sarifRun, 0, len(reps))}
	for _, rep := range reps {
		log.Runs = append(log.Runs, sarifRunOf(rep))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(log)
}

// sarifRunOf is the run of one report.
func sarifRunOf(rep *reports.Report) sarifRun {
	rules, index := sarifRules(rep)
	results := sarifFindings(rep, index)
	notes := sarifNotifications(rep, index)
	cov := reports.CoverageOf(rep)
	invocation := map[string]any{"coverage": coverageLine(cov)}
	if len(rep.Caveats) > 0 {
		invocation["caveats"] = rep.Caveats
	}

	props := map[string]string{}
	if rep.FactsDigest != "" {
		props["facts_digest"] = rep.FactsDigest
	}
	if rep.PolicyDigest != "" {
		props["policy_digest"] = rep.PolicyDigest
	}
	run := sarifRun{
		Tool: sarifTool{Driver: sarifDriver{
			Name:           "gpuhost",
			Version:        sarifVersionOf(rep.ToolVersion),
			InformationURI: toolInfoURI,
			Rules:          rules,
		}},
		// One category per image (or host), so code scanning keeps each
		// image's alerts apart instead of closing one's with another's run.
		AutomationDetails: sarifAutomationDetails{ID: "gpuhost/" + rep.Target.Kind + "/" + targetName(rep.Target) + "/"},
		OriginalURIBaseIDs: map[string]sarifBase{imageRoot: rootBase(rep.Target),
			policyRoot: {Description: sarifText{Text: "the policy pack the target was judged by (" + rep.PolicyDigest + ")"}}},
		// An errored check means the scan cannot be trusted as a whole.
		Invocations: []sarifInvocation{{
			ExecutionSuccessful:        !rep.Errored(),
			ToolExecutionNotifications: notes,
			Properties:                 invocation,
		}},
		Results:    results,
		Properties: props,
	}
	if slices.ContainsFunc(rep.Results, func(r reports.Result) bool { return len(r.Related) > 0 }) {
		run.OriginalURIBaseIDs[sourceRoot] = sarifBase{Description: sarifText{Text: "the directory the build ran in, which its template is relative to"}}
	}
	return run
}

// sarifRules builds the rule catalogue and the index every result and
// notification points into: one rule per check id, every check included so
// the catalogue is complete even for rules that passed. The first result of
// an id wins.
func sarifRules(rep *reports.Report) ([]sarifRule, map[string]int) {
	byID := map[string]reports.Result{}
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
	return rules, index
}

// sarifFindings keeps only the verdicts code scanning should raise as
// alerts (failures, errors and waivers, which it shows as suppressed), and
// keeps their fingerprints unique so no alert silently replaces another.
func sarifFindings(rep *reports.Report, index map[string]int) []sarifResult {
	results := []sarifResult{}
	for _, res := range rep.Results {
		if res.Status != reports.StatusFail && res.Status != reports.StatusError && res.Status != reports.StatusWaived {
			continue
		}
		results = append(results, sarifResultsFor(rep, res, index[res.ID])...)
	}
	// Two findings of one check about one subject (two servers without
	// protocols in one nginx file) would share a print; the later ones are
	// told apart by their order, as code scanning's own line hashes are.
	seen := map[string]int{}
	for i := range results {
		fp := results[i].PartialFingerprints
		if n := seen[fp["gpuhostFinding/v1"]]; n > 0 {
			fp["gpuhostFinding/v1"] += "/" + strconv.Itoa(n+1)
			fp["primaryLocationLineHash"] = strings.TrimSuffix(fp["primaryLocationLineHash"], ":1") + ":" + strconv.Itoa(n+1)
		}
		seen[strings.Split(fp["gpuhostFinding/v1"], "/")[0]]++
	}
	return results
}

// sarifNotifications reports the checks that reached no verdict as tool
// notifications rather than results, so code scanning shows what was not
// judged without opening alerts for it. A gap severe enough to matter is a
// warning, not a note.
func sarifNotifications(rep *reports.Report, index map[string]int) []sarifNotification {
	var notes []sarifNotification
	for _, c := range rep.Caveats {
		notes = append(notes, sarifNotification{Level: "warning", Message: sarifText{Text: caveatLine(c)}})
	}
	for _, res := range rep.Results {
		if !res.Unevaluated() {
			continue
		}
		level := "note"
		switch {
		case res.Status == reports.StatusError:
			level = "error"
		case reports.SeverityRank(res.Severity) <= reports.SeverityRank(reports.GapSeverity):
			level = "warning"
		}
		notes = append(notes, sarifNotification{
			Level:          level,
			Message:        sarifText{Text: res.ID + " (" + res.Severity + ") " + res.Status + ": " + strings.Join(res.Messages, "; ")},
			AssociatedRule: &sarifRuleRef{ID: res.ID, Index: index[res.ID]},
		})
	}
	return notes
}

// maxSARIFDescription is the longest rule description GitHub code scanning
// takes.
const maxSARIFDescription = 1024

func sarifRuleFor(res reports.Result) sarifRule {
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
		FullDescription:      sarifText{Text: truncate(desc, maxSARIFDescription)},
		Help:                 sarifHelp{Text: help, Markdown: remediationMarkdown(help)},
		DefaultConfiguration: sarifConfiguration{Level: severityLevel(res.Severity)},
		Properties: sarifRuleProps{
			Tags:             tags,
			SecuritySeverity: score,
			Precision:        "high",
		},
	}
}

// imageRoot is the uriBaseId of the scanned root: every artifact URI is a
// path inside the target, relative to it, so a report reads the same
// wherever the image was unpacked or built.
const imageRoot = "IMAGEROOT"

// policyRoot is the uriBaseId of the policy pack, where a result of a check
// that names no file in the target points: at the check itself.
const policyRoot = "POLICYROOT"

// sarifResultsFor turns one failed, errored or waived check into SARIF
// results: one for each finding the policy located (a file, a port, a GPU),
// and one for the messages it did not, which are about the check as a
// whole and so point at the scanned root.
func sarifResultsFor(rep *reports.Report, res reports.Result, ruleIndex int) []sarifResult {
	located := map[string]bool{}
	var out []sarifResult
	for _, f := range res.Findings {
		if !f.Located() {
			continue
		}
		located[f.Message] = true
		out = append(out, sarifResultOf(rep, res, ruleIndex, f.Message, f))
	}
	var rest []string
	for _, m := range res.Messages {
		if !located[m] {
			rest = append(rest, m)
		}
	}
	if len(rest) > 0 || len(out) == 0 {
		text := strings.Join(rest, "; ")
		if text == "" {
			text = res.Title
		}
		out = append(out, sarifResultOf(rep, res, ruleIndex, text, reports.Finding{}))
	}
	return out
}

func sarifResultOf(rep *reports.Report, res reports.Result, ruleIndex int, text string, f reports.Finding) sarifResult {
	level := severityLevel(res.Severity)
	if res.Status == reports.StatusError {
		level = "error"
	}
	loc := sarifLocation{
		PhysicalLocation: physicalOf(res, f),
		LogicalLocations: []sarifLogical{{
			Name:               rep.Target.Ref,
			FullyQualifiedName: rep.Target.Kind + ":" + rep.Target.Ref,
			Kind:               rep.Target.Kind,
		}},
	}
	// What a finding is about names it across runs: the check, the target
	// and the file, port or GPU. The message is left out, so rewording a
	// policy or a changed value in it (a version, a count) is not a new
	// alert; the line is left out of the finding's own print, so an edit
	// above it is not either, and only the line hash follows the line.
	subject := f.File
	if f.Subject != "" {
		subject += "#" + f.Subject
	}
	target := rep.Target.Kind + ":" + targetName(rep.Target)
	out := sarifResult{
		RuleID:    res.ID,
		RuleIndex: ruleIndex,
		Level:     level,
		Message:   sarifText{Text: text},
		Locations: []sarifLocation{loc},
		PartialFingerprints: map[string]string{
			"gpuhostFinding/v1":       fingerprint(res.ID, target, subject),
			"primaryLocationLineHash": fingerprint(res.ID, target, subject, strconv.Itoa(f.Line))[:16] + ":1",
		},
		Properties: map[string]string{"status": res.Status, "severity": res.Severity},
	}
	for i, rel := range res.Related {
		out.RelatedLocations = append(out.RelatedLocations, sarifRelated{ID: i + 1, PhysicalLocation: sourceLocation(rel), Message: sarifText{Text: rel.Message}})
	}
	if f.Subject != "" {
		out.Properties["subject"] = f.Subject
	}
	if w := res.Waiver; w != nil && w.Expired {
		// A property, not the message, so the text says what is wrong and
		// the waiver's lapse is said once, beside it.
		out.Properties["expiredWaiver"] = expiredWaiverLine(w)
	}
	if res.Status == reports.StatusWaived {
		j := "waived"
		if w := res.Waiver; w != nil {
			j = w.Justification + " (approved by " + w.ApprovedBy + ", expires " + w.Expires + waiverRefs(w) + ")"
		}
		out.Suppressions = []sarifSuppression{{Kind: "external", Status: "accepted", Justification: j}}
	}
	return out
}

// physicalOf is where a result points: GitHub annotates a file and line,
// never a directory. The finding's own file, at its line or else the first;
// else the file that carries the fix (the check's location), from its
// first line; else, for a check that names neither, its own policy file
// in the pack (POLICYROOT). A file that is not a path in the target ("(command line)"
// for sshd's -o options) is no artifact.
func physicalOf(res reports.Result, f reports.Finding) sarifPhysical {
	line := 1
	file := f.File
	switch {
	case strings.HasPrefix(file, "/") && path.Clean(file) != "/":
		if f.Line > 0 {
			line = f.Line
		}
	case strings.HasPrefix(res.Location, "/") && path.Clean(res.Location) != "/":
		file = res.Location
	default:
		policy := res.File
		if policy == "" {
			// A report made without the engine names no policy file.
			policy = res.ID + ".rego"
		}
		return sarifPhysical{ArtifactLocation: sarifArtifact{URI: artifactURI(policy), URIBaseID: policyRoot},
			Region: &sarifRegion{StartLine: 1}}
	}
	return sarifPhysical{ArtifactLocation: sarifArtifact{URI: artifactURI(file), URIBaseID: imageRoot},
		Region: &sarifRegion{StartLine: line}}
}

// sarifVersionOf is the tool version as SARIF consumers compare it, which
// must start with a number: "v1.2.3" is 1.2.3, and a build from a commit
// ("a65c5bb", "dev") is 0.0.0 with the commit kept after it.
func sarifVersionOf(v string) string {
	v = strings.TrimPrefix(v, "v")
	switch {
	case v == "":
		return "0.0.0"
	case v[0] < '0' || v[0] > '9':
		return "0.0.0-" + v
	}
	return v
}

// sourceRoot is the uriBaseId of the files a build was made from, such as
// its Packer template, relative to the directory it ran in.
const sourceRoot = "SRCROOT"

// sourceLocation is where a related place outside the target is: an
// absolute path as a file URI, a relative one under SRCROOT.
func sourceLocation(rel reports.Related) sarifPhysical {
	line := max(rel.Line, 1)
	if filepath.IsAbs(rel.File) {
		return sarifPhysical{ArtifactLocation: sarifArtifact{URI: (&url.URL{Scheme: "file", Path: filepath.ToSlash(rel.File)}).String()},
			Region: &sarifRegion{StartLine: line}}
	}
	return sarifPhysical{ArtifactLocation: sarifArtifact{URI: artifactURI(rel.File), URIBaseID: sourceRoot}, Region: &sarifRegion{StartLine: line}}
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

// artifactURI turns a path inside the target into a URI reference relative
// to IMAGEROOT, escaping what a URI cannot hold. A finding without a file
// points at the root itself.
func artifactURI(p string) string {
	p = strings.TrimLeft(path.Clean("/"+p), "/")
	if p == "" {
		return "./"
	}
	// url.URL writes a first segment holding a colon as ./a:b, so it cannot
	// read as a scheme.
	return (&url.URL{Path: p}).String()
}

// targetName is the target's stable name: an image's or a tree's file name
// (not where it was built), or the host's name, so the same image scanned
// in another build directory keeps its alerts.
func targetName(t reports.Target) string {
	switch t.Kind {
	case "image", "rootfs":
		if t.Ref != "" {
			return path.Base(filepath.ToSlash(t.Ref))
		}
	case "host":
		if t.Hostname != "" {
			return t.Hostname
		}
	}
	if t.Ref == "" {
		return "unnamed"
	}
	return t.Ref
}

// rootBase says where IMAGEROOT was: the tree's or the image's absolute
// path as a file URI (an image's root is the file system inside it), the
// host's root by its name. A relative path cannot become an absolute URI
// without guessing the directory the scan ran in, so it is only described.
func rootBase(t reports.Target) sarifBase {
	b := sarifBase{Description: sarifText{Text: "the root file system of " + t.Kind + " " + t.Ref}}
	switch t.Kind {
	case "rootfs", "image":
		if filepath.IsAbs(t.Ref) {
			b.URI = (&url.URL{Scheme: "file", Path: strings.TrimSuffix(filepath.ToSlash(t.Ref), "/") + "/"}).String()
		}
	case "host":
		host := t.Hostname
		if host == "" {
			host = t.Ref
		}
		b.URI = (&url.URL{Scheme: "file", Host: host, Path: "/"}).String()
	}
	return b
}

func fingerprint(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:32]
}
