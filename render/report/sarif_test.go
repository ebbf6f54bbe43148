package report

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/reports"
)

func TestSARIF(t *testing.T) {
	rep := loadReport(t)
	var doc struct {
		Schema  string `json:"$schema"`
		Version string `json:"version"`
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name    string `json:"name"`
					Version string `json:"version"`
					Rules   []struct {
						ID         string `json:"id"`
						Properties struct {
							Tags             []string `json:"tags"`
							SecuritySeverity string   `json:"security-severity"`
						} `json:"properties"`
					} `json:"rules"`
				} `json:"driver"`
			} `json:"tool"`
			AutomationDetails struct {
				ID string `json:"id"`
			} `json:"automationDetails"`
			OriginalURIBaseIDs map[string]struct {
				URI         string `json:"uri"`
				Description struct {
					Text string `json:"text"`
				} `json:"description"`
			} `json:"originalUriBaseIds"`
			Results []struct {
				RuleID    string `json:"ruleId"`
				RuleIndex int    `json:"ruleIndex"`
				Level     string `json:"level"`
				Message   struct {
					Text string `json:"text"`
				} `json:"message"`
				Locations []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI       string `json:"uri"`
							URIBaseID string `json:"uriBaseId"`
						} `json:"artifactLocation"`
						Region *struct {
							StartLine int `json:"startLine"`
						} `json:"region"`
					} `json:"physicalLocation"`
					LogicalLocations []struct {
						Kind string `json:"kind"`
					} `json:"logicalLocations"`
				} `json:"locations"`
				Suppressions []struct {
					Kind, Status, Justification string
				} `json:"suppressions"`
				PartialFingerprints map[string]string `json:"partialFingerprints"`
				RelatedLocations    []struct {
					PhysicalLocation struct {
						ArtifactLocation struct {
							URI       string `json:"uri"`
							URIBaseID string `json:"uriBaseId"`
						} `json:"artifactLocation"`
						Region struct {
							StartLine int `json:"startLine"`
						} `json:"region"`
					} `json:"physicalLocation"`
				} `json:"relatedLocations"`
			} `json:"results"`
		} `json:"runs"`
	}
	if err := json.Unmarshal(rendered(t, mustLookup(t, "sarif"), rep), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Version != "2.1.0" || doc.Schema != "https://json.schemastore.org/sarif-2.1.0.json" || len(doc.Runs) != 1 {
		t.Fatalf("version %q schema %q runs %d", doc.Version, doc.Schema, len(doc.Runs))
	}
	run := doc.Runs[0]
	if run.Tool.Driver.Name != "gpuhost" || run.Tool.Driver.Version != "0.3.0" || run.AutomationDetails.ID != "gpuhost/image/ubuntu-22.04-gpu.qcow2/" {
		t.Errorf("driver %q %q automation %q", run.Tool.Driver.Name, run.Tool.Driver.Version, run.AutomationDetails.ID)
	}
	rules := run.Tool.Driver.Rules
	if len(rules) != 13 {
		t.Errorf("%d rules, want one per check (13)", len(rules))
	}
	for i := 1; i < len(rules); i++ {
		if rules[i-1].ID >= rules[i].ID {
			t.Errorf("rules not sorted: %s before %s", rules[i-1].ID, rules[i].ID)
		}
	}
	// The relative ref of the golden target cannot become an absolute URI
	// without guessing the scan's directory: IMAGEROOT is only described.
	if base, ok := run.OriginalURIBaseIDs["IMAGEROOT"]; !ok || base.URI != "" || !strings.Contains(base.Description.Text, "build/ubuntu-22.04-gpu.qcow2") {
		t.Errorf("originalUriBaseIds %+v", run.OriginalURIBaseIDs)
	}
	// One result per located finding, and one for a check's messages that
	// carry no finding: GH-TLS-001 names two files, GH-CTR-004's messages
	// are text only and stay one result.
	if len(run.Results) != 8 {
		t.Errorf("%d results, want 8 (TLS-001 twice, 4 more fails, 1 error, 1 waived)", len(run.Results))
	}
	levels := map[string]string{}
	prints := map[string]string{}
	for _, r := range run.Results {
		if r.RuleIndex < 0 || r.RuleIndex >= len(rules) || rules[r.RuleIndex].ID != r.RuleID {
			t.Errorf("result %s: ruleIndex %d does not point at its rule", r.RuleID, r.RuleIndex)
		}
		if len(r.Locations) != 1 || len(r.Locations[0].LogicalLocations) != 1 || r.Locations[0].LogicalLocations[0].Kind != "image" {
			t.Errorf("result %s: bad locations", r.RuleID)
		}
		// GitHub annotates a file at a line: every result has both, and
		// none points at a directory.
		phys := r.Locations[0].PhysicalLocation
		if art := phys.ArtifactLocation; (art.URIBaseID != "IMAGEROOT" && art.URIBaseID != "POLICYROOT") ||
			strings.HasPrefix(art.URI, "/") || strings.HasSuffix(art.URI, "/") || art.URI == "" || strings.Contains(art.URI, "build/") {
			t.Errorf("result %s: artifact %+v is not a file relative to IMAGEROOT or POLICYROOT", r.RuleID, art)
		}
		if phys.Region == nil || phys.Region.StartLine < 1 {
			t.Errorf("result %s: no region.startLine", r.RuleID)
		}
		fp := r.PartialFingerprints["gpuhostFinding/v1"]
		if fp == "" || r.PartialFingerprints["primaryLocationLineHash"] == "" {
			t.Errorf("result %s: fingerprints %v", r.RuleID, r.PartialFingerprints)
		}
		if other, dup := prints[fp]; dup {
			t.Errorf("results %s and %s share the fingerprint %s", other, r.RuleID, fp)
		}
		prints[fp] = r.RuleID
		levels[r.RuleID] = r.Level
	}
	wantLevels := map[string]string{"GH-GPU-003": "error", "GH-TLS-001": "error", "GH-SSH-002": "warning",
		"GH-CTR-004": "note", "GH-PKG-005": "note", "GH-NET-002": "error", "GH-ENC-001": "error"}
	for id, want := range wantLevels {
		if levels[id] != want {
			t.Errorf("%s level %q, want %q", id, levels[id], want)
		}
	}
	tlsFiles := map[string]int{}
	for _, r := range run.Results {
		loc := r.Locations[0].PhysicalLocation
		switch r.RuleID {
		case "GH-TLS-001":
			if loc.Region == nil {
				t.Errorf("TLS location %+v has no region", loc)
				continue
			}
			tlsFiles[loc.ArtifactLocation.URI] = loc.Region.StartLine
			if !strings.HasPrefix(r.Message.Text, "/"+loc.ArtifactLocation.URI+":") || strings.Contains(r.Message.Text, "; ") {
				t.Errorf("TLS message %q at %s", r.Message.Text, loc.ArtifactLocation.URI)
			}
		case "GH-GPU-003":
			// No finding names a file: the check's location carries the fix.
			if loc.ArtifactLocation.URI != "proc/driver/nvidia/version" || loc.ArtifactLocation.URIBaseID != "IMAGEROOT" || loc.Region.StartLine != 1 {
				t.Errorf("GPU location %+v, want the check's location", loc)
			}
		case "GH-CTR-004":
			// Neither a finding's file nor a location: the policy itself.
			if loc.ArtifactLocation.URIBaseID != "POLICYROOT" || loc.ArtifactLocation.URI != "containers/systemd_cgroup.rego" {
				t.Errorf("CTR location %+v, want its policy file", loc)
			}
		case "GH-ENC-001":
			// A finding that names a file but no line points at its first.
			if loc.ArtifactLocation.URI != "etc/crypttab" || loc.Region.StartLine != 1 {
				t.Errorf("ENC location %+v", loc)
			}
			if len(r.Suppressions) != 1 || r.Suppressions[0].Kind != "external" || r.Suppressions[0].Status != "accepted" ||
				!strings.Contains(r.Suppressions[0].Justification, "alice@example.com") {
				t.Errorf("waived result suppressions %+v", r.Suppressions)
			}
		case "GH-SSH-002":
			if loc.ArtifactLocation.URI != "etc/ssh/sshd_config" || loc.Region == nil || loc.Region.StartLine != 33 {
				t.Errorf("SSH location %+v", loc)
			}
			// The template block that configures sshd, relative to where
			// the build ran.
			if rel := r.RelatedLocations; len(rel) != 1 || rel[0].PhysicalLocation.ArtifactLocation.URIBaseID != "SRCROOT" ||
				rel[0].PhysicalLocation.ArtifactLocation.URI != "images/ubuntu-22.04-gpu.pkr.hcl" || rel[0].PhysicalLocation.Region.StartLine != 212 {
				t.Errorf("SSH related locations %+v", rel)
			}
			if len(r.Suppressions) != 0 {
				t.Error("an expired waiver must not suppress")
			}
		}
	}
	if tlsFiles["etc/ssl/openssl.cnf"] != 12 || tlsFiles["etc/nginx/nginx.conf"] != 36 {
		t.Errorf("TLS locations %v", tlsFiles)
	}
	for _, rule := range rules {
		if rule.ID == "GH-TLS-001" {
			if rule.Properties.SecuritySeverity != "8.0" || !contains(rule.Properties.Tags, "nist-800-53/SC-8") {
				t.Errorf("TLS rule properties %+v", rule.Properties)
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestSARIFFingerprints: a finding keeps its print when its message or
// line changes, and two findings about one subject get distinct prints.
func TestSARIFFingerprints(t *testing.T) {
	prints := func(rep *reports.Report) []string {
		var doc struct {
			Runs []struct {
				Results []struct {
					PartialFingerprints map[string]string `json:"partialFingerprints"`
				} `json:"results"`
			} `json:"runs"`
		}
		if err := json.Unmarshal(rendered(t, mustLookup(t, "sarif"), rep), &doc); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range doc.Runs[0].Results {
			out = append(out, r.PartialFingerprints["gpuhostFinding/v1"])
		}
		return out
	}
	report := func(msg string, line int, files ...string) *reports.Report {
		res := reports.Result{ID: "GH-TLS-006", Severity: "high", Status: reports.StatusFail, Title: "t"}
		for _, f := range files {
			res.Messages = append(res.Messages, msg)
			res.Findings = append(res.Findings, reports.Finding{Message: msg, File: f, Line: line})
		}
		return &reports.Report{Target: reports.Target{Kind: "image", Ref: "/srv/a/ubuntu.qcow2"}, Results: []reports.Result{res}}
	}
	a := prints(report("nginx.conf:36: ssl_protocols enables TLSv1.1", 36, "/etc/nginx/nginx.conf"))
	b := prints(report("nginx.conf:40: ssl_protocols enables TLSv1.1 and more", 40, "/etc/nginx/nginx.conf"))
	if len(a) != 1 || !slices.Equal(a, b) {
		t.Errorf("the print follows the message or line: %v, %v", a, b)
	}
	moved := report("m", 36, "/etc/nginx/nginx.conf")
	moved.Target.Ref = "/other/build/dir/ubuntu.qcow2"
	if c := prints(moved); !slices.Equal(a, c) {
		t.Errorf("the print follows the build directory: %v, %v", a, c)
	}
	twice := prints(&reports.Report{Target: reports.Target{Kind: "image", Ref: "x"}, Results: []reports.Result{{ID: "GH-TLS-006", Severity: "high", Status: reports.StatusFail,
		Messages: []string{"a", "b"}, Findings: []reports.Finding{{Message: "a", File: "/etc/n.conf", Line: 3}, {Message: "b", File: "/etc/n.conf", Line: 9}}}}})
	if len(twice) != 2 || twice[0] == twice[1] {
		t.Errorf("two findings in one file share a print: %v", twice)
	}
}
