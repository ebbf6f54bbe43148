package trivy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aquasecurity/trivy-db/pkg/db"
	dbtypes "github.com/aquasecurity/trivy-db/pkg/types"
	"github.com/goccy/go-yaml"
	bolt "go.etcd.io/bbolt"
)

// dbFixture is the YAML form of a small trivy DB (testdata/db/*.yaml).
type dbFixture struct {
	UpdatedAt time.Time `yaml:"updated_at"`
	Sources   []struct {
		Bucket string `yaml:"bucket"`
		ID     string `yaml:"id"`
		Name   string `yaml:"name"`
	} `yaml:"sources"`
	Advisories []struct {
		Bucket   string `yaml:"bucket"`
		Package  string `yaml:"package"`
		ID       string `yaml:"id"`
		Fixed    string `yaml:"fixed"`
		Severity string `yaml:"severity"`
	} `yaml:"advisories"`
	Vulnerabilities []struct {
		ID        string            `yaml:"id"`
		Title     string            `yaml:"title"`
		Severity  map[string]string `yaml:"severity"`
		Published *time.Time        `yaml:"published"`
	} `yaml:"vulnerabilities"`
}

// buildDB writes testdata/db/<name>.yaml as a trivy DB directory (trivy.db
// in trivy-db's bucket layout, written through trivy-db itself, and a
// metadata.json whose NextUpdate lies in the future, as trivy's own tests
// do) and returns the directory.
func buildDB(t *testing.T, name string) string {
	t.Helper()
	var fx dbFixture
	if err := yaml.Unmarshal(readTestdata(t, "db/"+name+".yaml"), &fx); err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	dir := t.TempDir()

	dbMu.Lock()
	defer dbMu.Unlock()
	if err := db.Init(dir, db.WithBoltOptions(&bolt.Options{Timeout: time.Second})); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dbc := db.Config{}
	err := dbc.BatchUpdate(func(tx *bolt.Tx) error {
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
					return err
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
					return err
				}
				vuln.VendorSeverity[dbtypes.SourceID(src)] = sev
			}
			if err := dbc.PutVulnerability(tx, v.ID, vuln); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("writing fixture DB: %v", err)
	}
	meta, err := json.Marshal(map[string]any{
		"Version":      db.SchemaVersion,
		"NextUpdate":   time.Now().Add(24 * time.Hour).UTC(),
		"UpdatedAt":    fx.UpdatedAt,
		"DownloadedAt": fx.UpdatedAt,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, metadataFile), meta, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
