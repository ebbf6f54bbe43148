package facts

// Package is one dpkg package in state "installed".
type Package struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Arch    string `json:"arch"`
	Held    bool   `json:"held"`
	// Line is where the package's paragraph starts in
	// /var/lib/dpkg/status, so that a finding about it points there; 0
	// when the package list came from elsewhere.
	Line int `json:"line,omitempty" jsonschema:"minimum=1"`
}

// ConfigFile is the sha256 of one configuration file the baked manifest
// records, read from the live target so drift can compare the two.
type ConfigFile struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256" jsonschema:"pattern=^[0-9a-f]{64}$"`
}

// Vulnerabilities are OS package findings from an offline trivy DB.
type Vulnerabilities struct {
	DB string `json:"db"`
	// DBUpdatedAt is when the DB was built (trivy's UpdatedAt, RFC 3339).
	// Empty when its metadata.json does not say: then nothing can tell how
	// stale its advisories are, and GH-SC-001 errors rather than pass.
	DBUpdatedAt string `json:"db_updated_at,omitempty" jsonschema:"format=date-time"`
	// DBNextUpdate is when the DB's publisher meant it to be replaced
	// (trivy's NextUpdate, RFC 3339); empty when not given.
	DBNextUpdate string `json:"db_next_update,omitempty" jsonschema:"format=date-time"`
	// DBDemo marks a DB written from a YAML fixture (tools/trivydb): a
	// handful of sample advisories, so a clean result proves nothing.
	DBDemo   bool      `json:"db_demo,omitempty"`
	Findings []Finding `json:"findings"`
	// Images are the pre-seeded container bases (Containers.Images), each
	// matched against the same DB from the package database its own
	// layers carry, as `trivy image` would; absent when none is seeded.
	Images []ImageVulnerabilities `json:"images,omitempty"`
	// ImagesError says why the seeded bases could not be listed, so none
	// was matched: the check that needs them is then an error.
	ImagesError string `json:"images_error,omitempty"`
}

// ImageVulnerabilities are the findings in one pre-seeded image.
type ImageVulnerabilities struct {
	Ref    string `json:"ref"`
	Digest string `json:"digest" jsonschema:"pattern=^sha256:[0-9a-f]{64}$"`
	// OS is the image's distribution and release ("ubuntu 22.04").
	OS       string    `json:"os,omitempty"`
	Findings []Finding `json:"findings"`
	// Error says why the image could not be matched (no package database,
	// a distribution trivy's DB does not cover, a damaged layer); its
	// findings are then unknown, never none.
	Error string `json:"error,omitempty"`
}

// Finding is one vulnerable package.
type Finding struct {
	ID        string `json:"id"`
	Package   string `json:"package"`
	Installed string `json:"installed"`
	Fixed     string `json:"fixed"`
	Severity  string `json:"severity"`
	// Published is when the vulnerability was made public (RFC 3339, from
	// the DB's NVD or GHSA data); empty when the DB does not say.
	Published string `json:"published,omitempty"`
}

// SBOM describes the software bill of materials an image carries at
// SBOM.Path, so that a policy can require one.
type SBOM struct {
	// Present says whether Path is a regular file in the target.
	Present bool   `json:"present"`
	Path    string `json:"path"`
	// Format and SpecVersion are the document's own ("CycloneDX", "1.6").
	Format      string `json:"format,omitempty"`
	SpecVersion string `json:"spec_version,omitempty"`
	// Components counts the document's top-level components.
	Components int `json:"components" jsonschema:"minimum=0"`
	// SHA256 is the digest of the file, for comparison with a published copy.
	SHA256 string `json:"sha256,omitempty" jsonschema:"pattern=^[0-9a-f]{64}$"`
}
