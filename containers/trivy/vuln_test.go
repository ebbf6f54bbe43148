package trivy

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/checks/facts"
)

func TestVulnerabilitiesFindsFixtureCVEs(t *testing.T) {
	dbDir := buildDB(t, "bookworm")
	got, err := Vulnerabilities(context.Background(), bookworm(t), dbDir)
	if err != nil {
		t.Fatal(err)
	}
	if got.DB != "trivy-db v2 2026-11-01" {
		t.Errorf("DB = %q", got.DB)
	}
	want := []facts.Finding{
		{ID: "CVE-2023-50782", Package: "libssl3", Installed: "3.0.11-1~deb12u2", Fixed: "", Severity: "LOW", Published: "2024-02-05T21:15:00Z"},
		{ID: "CVE-2024-5535", Package: "libssl3", Installed: "3.0.11-1~deb12u2", Fixed: "3.0.14-1~deb12u1", Severity: "CRITICAL", Published: "2024-06-27T11:15:00Z"},
		{ID: "CVE-2023-50782", Package: "openssl", Installed: "3.0.11-1~deb12u2", Fixed: "", Severity: "LOW", Published: "2024-02-05T21:15:00Z"},
		{ID: "CVE-2024-5535", Package: "openssl", Installed: "3.0.11-1~deb12u2", Fixed: "3.0.14-1~deb12u1", Severity: "CRITICAL", Published: "2024-06-27T11:15:00Z"},
	}
	if !slices.Equal(got.Findings, want) {
		t.Errorf("findings:\n got %+v\nwant %+v", got.Findings, want)
	}
	// The result goes into the facts document as is; it must keep to the
	// schema.
	f := facts.New(facts.KindRootfs, "x", time.Unix(0, 0))
	f.Vulnerabilities = got
	if err := facts.Validate(*f); err != nil {
		t.Errorf("facts with these findings do not validate: %v", err)
	}
}

func TestVulnerabilitiesDBErrors(t *testing.T) {
	ctx := context.Background()
	root := bookworm(t)
	good := buildDB(t, "bookworm")
	cases := map[string]func(t *testing.T) string{
		"missing dir": func(t *testing.T) string { return filepath.Join(t.TempDir(), "nope") },
		"empty dir":   func(t *testing.T) string { return t.TempDir() },
		"no metadata": func(t *testing.T) string {
			dir := copyDB(t, good)
			os.Remove(filepath.Join(dir, metadataFile))
			return dir
		},
		"bad metadata": func(t *testing.T) string {
			dir := copyDB(t, good)
			os.WriteFile(filepath.Join(dir, metadataFile), []byte("{not json"), 0o644)
			return dir
		},
		"schema 1": func(t *testing.T) string {
			dir := copyDB(t, good)
			os.WriteFile(filepath.Join(dir, metadataFile), []byte(`{"Version":1}`), 0o644)
			return dir
		},
		"corrupt db": func(t *testing.T) string {
			dir := copyDB(t, good)
			os.WriteFile(filepath.Join(dir, dbFile), []byte(strings.Repeat("garbage!", 4096)), 0o644)
			return dir
		},
	}
	for name, mk := range cases {
		t.Run(name, func(t *testing.T) {
			dir := mk(t)
			before, _ := os.ReadFile(filepath.Join(dir, dbFile))
			_, err := Vulnerabilities(ctx, root, dir)
			if err == nil || !strings.Contains(err.Error(), dir) {
				t.Fatalf("err = %v, want an error naming %s", err, dir)
			}
			// Neither trivy-db nor we may create, change or delete the DB.
			after, _ := os.ReadFile(filepath.Join(dir, dbFile))
			if string(before) != string(after) {
				t.Errorf("%s changed on disk", dbFile)
			}
		})
	}
}

// copyDB copies a DB directory so a case can damage it.
func copyDB(t *testing.T, src string) string {
	t.Helper()
	dst := t.TempDir()
	for _, name := range []string{dbFile, metadataFile} {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}
