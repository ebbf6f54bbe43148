// Package vex writes the OpenVEX document of the CVEs a gate's waivers
// accepted, so that scanners run downstream on the published image (trivy
// --vex, grype --vex) honour the decision instead of raising it again.
//
// Each waived finding of the CVE check becomes one statement: the
// vulnerability, the image as the product with the vulnerable package as
// its subcomponent (both as purls), status not_affected with the waiver's
// justification, approver, ticket and expiry as its impact statement. A
// waiver accepts a risk rather than proving the code unreachable; OpenVEX
// has no status for that, and not_affected is the one scanners act on, so
// the statement says in words that it is a waiver.
package vex

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	govex "github.com/openvex/go-vex/pkg/vex"
	"github.com/package-url/packageurl-go"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan/waivers"
)

// Author is the document's author.
const Author = "gpuhost-gate"

// Document returns the OpenVEX JSON for the CVE findings rep's waivers
// waived on image, with the packages from vulns, or nil when none was
// waived. distro names the distribution for the packages' purls.
func Document(rep *reports.Report, vulns *facts.Vulnerabilities, distro facts.OS, image name.Digest, now time.Time) ([]byte, error) {
	product, err := imagePURL(image)
	if err != nil {
		return nil, err
	}
	doc := govex.New()
	doc.Author = Author
	doc.Tooling = "gpuhost"
	ts := now.UTC()
	doc.Timestamp = &ts
	for _, r := range rep.Results {
		if r.ID != waivers.CVECheck {
			continue
		}
		for _, f := range r.Findings {
			w := f.Waiver
			if w == nil || w.Expired || f.Subject == "" {
				continue
			}
			st := govex.Statement{
				Vulnerability: govex.Vulnerability{Name: govex.VulnerabilityID(f.Subject)},
				Timestamp:     &ts,
				Products: []govex.Product{{
					Component:     govex.Component{ID: product},
					Subcomponents: subcomponents(vulns, distro, f.Subject),
				}},
				Status: govex.StatusNotAffected,
				ImpactStatement: fmt.Sprintf("Waived, not fixed: %s (approved by %s, ticket %s, until %s)",
					w.Justification, w.ApprovedBy, w.Ticket, w.Expires),
			}
			if err := st.Validate(); err != nil {
				return nil, fmt.Errorf("writing the VEX statement of %s: %w", f.Subject, err)
			}
			doc.Statements = append(doc.Statements, st)
		}
	}
	if len(doc.Statements) == 0 {
		return nil, nil
	}
	id, err := doc.GenerateCanonicalID()
	if err != nil {
		return nil, fmt.Errorf("writing the VEX document: %w", err)
	}
	doc.ID = id
	var b bytes.Buffer
	if err := doc.ToJSON(&b); err != nil {
		return nil, fmt.Errorf("writing the VEX document: %w", err)
	}
	return b.Bytes(), nil
}

// imagePURL is the image as an OCI purl: its last path element, the
// manifest digest, and where it lives.
func imagePURL(image name.Digest) (string, error) {
	repo := image.Context()
	parts := strings.Split(repo.RepositoryStr(), "/")
	if image.DigestStr() == "" {
		return "", errors.New("writing the VEX document: the image has no digest")
	}
	q := packageurl.QualifiersFromMap(map[string]string{"repository_url": repo.Name()})
	return packageurl.NewPackageURL("oci", "", parts[len(parts)-1], image.DigestStr(), q, "").ToString(), nil
}

// subcomponents are the installed packages a CVE was found in, as deb
// purls, sorted.
func subcomponents(vulns *facts.Vulnerabilities, distro facts.OS, cve string) []govex.Subcomponent {
	if vulns == nil {
		return nil
	}
	var ids []string
	for _, f := range vulns.Findings {
		if f.ID != cve {
			continue
		}
		q := packageurl.Qualifiers{}
		if distro.ID != "" && distro.VersionID != "" {
			q = packageurl.QualifiersFromMap(map[string]string{"distro": distro.ID + "-" + distro.VersionID})
		}
		ids = append(ids, packageurl.NewPackageURL("deb", distro.ID, f.Package, f.Installed, q, "").ToString())
	}
	slices.Sort(ids)
	var out []govex.Subcomponent
	for _, id := range slices.Compact(ids) {
		out = append(out, govex.Subcomponent{Component: govex.Component{ID: id}})
	}
	return out
}
