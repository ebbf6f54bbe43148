package trivy

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

func TestVulnerabilitiesFindsFixtureCVEs(t *testing.T) {
	dbDir := buildDB(t, "bookworm")
	got, err := Vulnerabilities(context.Background(), bookworm(t), dbDir)
	if err != nil {
		t.Fatal(err)
	}
	today := time.Now().UTC().Format(time.DateOnly)
	if got.DB != "trivy-db v2 "+today+" (demo, advisories as of 2026-11-01)" {
		t.Errorf("DB = %q", got.DB)
	}
	if !got.DBDemo || !strings.HasPrefix(got.DBUpdatedAt, today) || got.DBNextUpdate <= got.DBUpdatedAt {
		t.Errorf("a fixture's DB is dated now, due in a day and marked demo: %+v", got)
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

func TestVulnerabilitiesCollector(t *testing.T) {
	dbDir := buildDB(t, "bookworm")
	run := func(t *testing.T, root string) (*facts.Facts, string, string) {
		t.Helper()
		fsys, closer, err := sysroot.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		defer closer.Close()
		f := facts.New(facts.KindRootfs, root, time.Unix(0, 0))
		c := VulnerabilitiesCollector(dbDir)
		status, reason := collect.Classify(c.Collect(context.Background(), &collect.Env{FS: fsys}, f))
		return f, status, reason
	}
	t.Run("bookworm", func(t *testing.T) {
		f, status, reason := run(t, bookworm(t))
		if status != facts.StatusOK || f.Vulnerabilities == nil || len(f.Vulnerabilities.Findings) != 4 {
			t.Fatalf("status %s (%s), vulnerabilities %+v", status, reason, f.Vulnerabilities)
		}
		// The fixture's DB is a demo one; the collector's reason is the
		// label a passing GH-SC-001 cannot carry.
		if !strings.Contains(reason, DemoLabel) {
			t.Errorf("reason %q does not say the DB is a demo", reason)
		}
	})
	t.Run("not debian", func(t *testing.T) {
		root := bookworm(t)
		put(t, root, "etc/os-release", []byte("ID=alpine\nVERSION_ID=3.20\n"))
		f, status, reason := run(t, root)
		if status != facts.StatusNotApplicable || f.Vulnerabilities != nil || !strings.Contains(reason, "alpine") {
			t.Fatalf("status %s (%s)", status, reason)
		}
	})
	t.Run("no dpkg", func(t *testing.T) {
		root := t.TempDir()
		put(t, root, "usr/lib/os-release", readTestdata(t, "bookworm/os-release"))
		if _, status, reason := run(t, root); status != facts.StatusNotApplicable || !strings.Contains(reason, "dpkg") {
			t.Fatalf("status %s (%s)", status, reason)
		}
	})
	t.Run("broken status", func(t *testing.T) {
		root := bookworm(t)
		put(t, root, "var/lib/dpkg/status", []byte("Package: a\nStatus: install ok installed\nVersion: !!\n"))
		if _, status, reason := run(t, root); status != facts.StatusError || !strings.Contains(reason, "/var/lib/dpkg/status") {
			t.Fatalf("status %s (%s)", status, reason)
		}
	})
}

// TestVulnerabilitiesReadsDBDates: the facts carry trivy's UpdatedAt and
// NextUpdate as they stand in metadata.json, a DB without the demo mark is
// no demo and its collector gives no reason, and a DB that does not say when
// it was built leaves db_updated_at empty for the policy to refuse.
func TestVulnerabilitiesReadsDBDates(t *testing.T) {
	root := bookworm(t)
	good := buildDB(t, "bookworm")
	for _, tc := range []struct {
		name, meta            string
		wantUpdated, wantNext string
		wantDB                string
		wantDemo              bool
	}{
		{
			name:        "trivy's own",
			meta:        `{"Version":2,"NextUpdate":"2026-11-22T06:11:35.9Z","UpdatedAt":"2026-11-21T06:11:35.9Z","DownloadedAt":"2026-11-21T07:00:00Z"}`,
			wantUpdated: "2026-11-21T06:11:35Z", wantNext: "2026-11-22T06:11:35Z", wantDB: "trivy-db v2 2026-11-21",
		},
		{
			name:   "no dates",
			meta:   `{"Version":2}`,
			wantDB: "trivy-db v2 of unknown date",
		},
		{
			name:   "zero dates",
			meta:   `{"Version":2,"NextUpdate":"0001-01-01T00:00:00Z","UpdatedAt":"0001-01-01T00:00:00Z"}`,
			wantDB: "trivy-db v2 of unknown date",
		},
		{
			name:        "demo mark",
			meta:        `{"Version":2,"UpdatedAt":"2026-11-21T00:00:00Z","GpuhostDemo":{"AdvisoriesAsOf":"2026-11-01T00:00:00Z"}}`,
			wantUpdated: "2026-11-21T00:00:00Z", wantDB: "trivy-db v2 2026-11-21 (demo, advisories as of 2026-11-01)", wantDemo: true,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyDB(t, good)
			if err := os.WriteFile(filepath.Join(dir, metadataFile), []byte(tc.meta), 0o644); err != nil {
				t.Fatal(err)
			}
			got, err := Vulnerabilities(context.Background(), root, dir)
			if err != nil {
				t.Fatal(err)
			}
			if got.DB != tc.wantDB || got.DBUpdatedAt != tc.wantUpdated || got.DBNextUpdate != tc.wantNext || got.DBDemo != tc.wantDemo {
				t.Errorf("got db %q updated %q next %q demo %v", got.DB, got.DBUpdatedAt, got.DBNextUpdate, got.DBDemo)
			}
			fsys, closer, err := sysroot.Open(root)
			if err != nil {
				t.Fatal(err)
			}
			defer closer.Close()
			f := facts.New(facts.KindRootfs, root, time.Unix(0, 0))
			status, reason := collect.Classify(VulnerabilitiesCollector(dir).Collect(context.Background(), &collect.Env{FS: fsys}, f))
			if status != facts.StatusOK || (reason != "") != tc.wantDemo {
				t.Errorf("collector: %s (%q)", status, reason)
			}
			if err := facts.Validate(*f); err != nil {
				t.Errorf("facts do not validate: %v", err)
			}
		})
	}
}
