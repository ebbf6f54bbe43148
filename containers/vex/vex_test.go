package vex

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	govex "github.com/openvex/go-vex/pkg/vex"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/reports"
)

func TestDocument(t *testing.T) {
	img, err := name.NewDigest("registry.example.com/gpu/debian-12-gpu@sha256:" + strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	w := &reports.Waiver{Justification: "unused API", ApprovedBy: "sec@example.com", Expires: "2099-01-01", Ticket: "SEC-1", CVE: []string{"CVE-2099-0001"}}
	rep := &reports.Report{Results: []reports.Result{
		{ID: "GH-SC-001", Status: reports.StatusWaived, Waiver: w, Findings: []reports.Finding{
			{Message: "openssl has critical CVE-2099-0001", Subject: "CVE-2099-0001", Waiver: w},
			{Message: "lapsed", Subject: "CVE-2099-0002", Waiver: &reports.Waiver{Expired: true}},
		}},
		// A waiver of another check is no statement about a CVE.
		{ID: "GH-SSH-001", Status: reports.StatusWaived, Waiver: w},
	}}
	vulns := &facts.Vulnerabilities{Findings: []facts.Finding{
		{ID: "CVE-2099-0001", Package: "openssl", Installed: "3.0.15-1~deb12u1"},
		{ID: "CVE-2099-0001", Package: "libssl3", Installed: "3.0.15-1~deb12u1"},
		{ID: "CVE-2099-0003", Package: "zlib1g", Installed: "1:1.2.13"},
	}}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	data, err := Document(rep, vulns, facts.OS{ID: "debian", VersionID: "12"}, img, now)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := govex.Parse(data)
	if err != nil {
		t.Fatalf("go-vex cannot read it back: %v\n%s", err, data)
	}
	if len(doc.Statements) != 1 {
		t.Fatalf("statements %+v", doc.Statements)
	}
	st := doc.Statements[0]
	product := "pkg:oci/debian-12-gpu@sha256:" + strings.Repeat("ab", 32) + "?repository_url=registry.example.com%2Fgpu%2Fdebian-12-gpu"
	if st.Vulnerability.Name != "CVE-2099-0001" || st.Status != govex.StatusNotAffected || len(st.Products) != 1 ||
		st.Products[0].ID != product || len(st.Products[0].Subcomponents) != 2 ||
		!strings.Contains(st.ImpactStatement, "Waived, not fixed: unused API (approved by sec@example.com, ticket SEC-1, until 2099-01-01)") {
		t.Errorf("statement %+v\n%s", st, data)
	}
	if got := st.Products[0].Subcomponents[1].ID; got != "pkg:deb/debian/openssl@3.0.15-1~deb12u1?distro=debian-12" {
		t.Errorf("subcomponent %s", got)
	}
	// What a downstream scanner asks: is this CVE in this image's
	// openssl covered?
	if m := doc.Matches("CVE-2099-0001", product, []string{"pkg:deb/debian/openssl@3.0.15-1~deb12u1?distro=debian-12"}); len(m) != 1 {
		t.Errorf("Matches found %d statements", len(m))
	}
	if doc.Author != Author || doc.ID == "" || !doc.Timestamp.Equal(now) {
		t.Errorf("metadata %+v", doc.Metadata)
	}

	none, err := Document(&reports.Report{Results: rep.Results[1:]}, vulns, facts.OS{}, img, now)
	if err != nil || none != nil {
		t.Errorf("no waived CVE: %s, %v", none, err)
	}
}
