package trivy

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aquasecurity/trivy-db/pkg/db"
	dbtypes "github.com/aquasecurity/trivy-db/pkg/types"
	"github.com/goccy/go-yaml"
	bolt "go.etcd.io/bbolt"

	"github.com/gpuhost/gpuhost/internal/boundedyaml"
	"github.com/gpuhost/gpuhost/internal/userfile"
)

// Fixture is a small vulnerability DB written as YAML: the advisories and
// vulnerabilities a demo or a test needs, where trivy's own DB cannot be
// downloaded. WriteDB turns it into the directory `--trivy-db` reads.
type Fixture struct {
	// UpdatedAt is when the fixture's advisories were taken from their
	// sources. The DB written from it is dated when WriteDB runs, as a
	// freshly downloaded one would be: a date frozen in the YAML would age
	// every demo out of GH-SC-001's max DB age a week after the file was
	// edited. The demo mark keeps this date, and reports show it.
	UpdatedAt time.Time `yaml:"updated_at"`
	// Sources name the data source of each bucket ("debian 12").
	Sources []FixtureSource `yaml:"sources"`
	// Advisories say which package versions a CVE affects.
	Advisories []FixtureAdvisory `yaml:"advisories"`
	// Vulnerabilities carry each CVE's title, severities and date.
	Vulnerabilities []FixtureVulnerability `yaml:"vulnerabilities"`
}

// FixtureSource is one bucket's data source.
type FixtureSource struct {
	Bucket string `yaml:"bucket"`
	ID     string `yaml:"id"`
	Name   string `yaml:"name"`
}

// FixtureAdvisory is one CVE on one source package of one release. An empty
// Fixed means no fix exists yet.
type FixtureAdvisory struct {
	Bucket   string `yaml:"bucket"`
	Package  string `yaml:"package"`
	ID       string `yaml:"id"`
	Fixed    string `yaml:"fixed"`
	Severity string `yaml:"severity"`
}

// FixtureVulnerability is a CVE's detail, with severities by source.
type FixtureVulnerability struct {
	ID        string            `yaml:"id"`
	Title     string            `yaml:"title"`
	Severity  map[string]string `yaml:"severity"`
	Published *time.Time        `yaml:"published"`
}

// ReadFixture parses the YAML fixture in file. Unknown keys are refused, so
// a misspelt field does not silently drop an advisory.
func ReadFixture(file string) (Fixture, error) {
	data, err := userfile.Read(file, userfile.MaxConfig)
	if err != nil {
		return Fixture{}, fmt.Errorf("reading DB fixture: %w", err)
	}
	var fx Fixture
	if err := boundedyaml.Decode(file, data, &fx, yaml.DisallowUnknownField()); err != nil {
		return Fixture{}, fmt.Errorf("parsing DB fixture: %w", err)
	}
	return fx, nil
}

// WriteDB writes fx as a trivy DB directory in dir: trivy.db in trivy-db's
// own bucket layout, written through trivy-db, and a metadata.json of this
// trivy's schema, updated now with its next update a day ahead, as `trivy
// --download-db-only` would leave it, plus the demo mark that labels every
// report resting on it. dir must not hold a DB already.
func WriteDB(dir string, fx Fixture) error {
	if _, err := os.Stat(filepath.Join(dir, dbFile)); err == nil {
		return fmt.Errorf("writing trivy DB: %s already holds %s", dir, dbFile)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("writing trivy DB: %w", err)
	}
	dbMu.Lock()
	defer dbMu.Unlock()
	if err := db.Init(dir, db.WithBoltOptions(&bolt.Options{Timeout: dbOpenTimeout})); err != nil {
		return fmt.Errorf("writing trivy DB in %s: %w", dir, err)
	}
	dbc := db.Config{}
	err := dbc.BatchUpdate(func(tx *bolt.Tx) error { return putFixture(dbc, tx, fx) })
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("writing trivy DB in %s: %w", dir, err)
	}
	now := time.Now().UTC()
	meta, err := json.Marshal(map[string]any{
		"Version":      db.SchemaVersion,
		"NextUpdate":   now.Add(24 * time.Hour),
		"UpdatedAt":    now,
		"DownloadedAt": now,
		"GpuhostDemo":  demoMark{AdvisoriesAsOf: fx.UpdatedAt.UTC()},
	})
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, metadataFile), meta, 0o644)
}

func putFixture(dbc db.Config, tx *bolt.Tx, fx Fixture) error {
	for _, s := range fx.Sources {
		if err := dbc.PutDataSource(tx, s.Bucket, dbtypes.DataSource{ID: dbtypes.SourceID(s.ID), Name: s.Name}); err != nil {
			return err
		}
	}
	for _, a := range fx.Advisories {
		adv := dbtypes.Advisory{FixedVersion: a.Fixed}
		if a.Severity != "" {
			sev, err := dbtypes.NewSeverity(a.Severity)
			if err != nil {
				return fmt.Errorf("advisory %s: %w", a.ID, err)
			}
			adv.Severity = sev
		}
		if err := dbc.PutAdvisory(tx, []string{a.Bucket, a.Package}, a.ID, adv); err != nil {
			return err
		}
	}
	for _, v := range fx.Vulnerabilities {
		vuln := dbtypes.Vulnerability{Title: v.Title, PublishedDate: v.Published, VendorSeverity: dbtypes.VendorSeverity{}}
		for src, s := range v.Severity {
			sev, err := dbtypes.NewSeverity(s)
			if err != nil {
				return fmt.Errorf("vulnerability %s: %w", v.ID, err)
			}
			vuln.VendorSeverity[dbtypes.SourceID(src)] = sev
		}
		if err := dbc.PutVulnerability(tx, v.ID, vuln); err != nil {
			return err
		}
	}
	return nil
}
