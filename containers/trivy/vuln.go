package trivy

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aquasecurity/trivy-db/pkg/db"
	dbtypes "github.com/aquasecurity/trivy-db/pkg/types"
	"github.com/aquasecurity/trivy/pkg/detector/ospkg"
	"github.com/aquasecurity/trivy/pkg/types"
	"github.com/aquasecurity/trivy/pkg/vulnerability"
	bolt "go.etcd.io/bbolt"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/osinfo"
	"github.com/gpuhost/gpuhost/facts/packages"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/target/collector"
)

const (
	dbFile       = "trivy.db"
	metadataFile = "metadata.json"
	// maxMetadataSize bounds metadata.json, a four-field object.
	maxMetadataSize = 64 << 10
	// dbOpenTimeout bounds the wait for bolt's file lock, held while another
	// process (a trivy download) writes the DB.
	dbOpenTimeout = 5 * time.Second
)

// dbMu serialises use of trivy-db, which keeps its open database in a
// package variable: two scans must not open, use and close it at once.
var dbMu sync.Mutex

// dbMetadata is the part of trivy's metadata.json read here.
type dbMetadata struct {
	Version    int       `json:"Version"`
	NextUpdate time.Time `json:"NextUpdate"`
	UpdatedAt  time.Time `json:"UpdatedAt"`
	// Demo is gpuhost's own key, which WriteDB adds. Trivy decodes the
	// file into a struct of its four fields and ignores the rest, and a
	// download rewrites the file without it, so the mark cannot outlive the
	// fixture's DB it was written with.
	Demo *demoMark `json:"GpuhostDemo,omitempty"`
}

// demoMark says a DB was written from a fixture, and as of when the
// fixture's advisories were taken.
type demoMark struct {
	AdvisoriesAsOf time.Time `json:"AdvisoriesAsOf"`
}

// DemoLabel goes wherever a report rests on a fixture's DB.
const DemoLabel = "demo vulnerability DB: not for release gating"

// Vulnerabilities matches the OS packages of the rootfs directory against
// the trivy vulnerability database in dbDir (trivy.db and metadata.json, as
// `trivy --download-db-only` leaves them) and returns the findings, sorted
// by package then ID. It works offline only: nothing here can download, and
// the DB is opened read-only. A missing, foreign-schema or corrupt DB is an
// error naming dbDir; so is a rootfs that is not Debian or Ubuntu.
func Vulnerabilities(ctx context.Context, rootfs, dbDir string) (*facts.Vulnerabilities, error) {
	fsys, closer, err := sysroot.Open(rootfs)
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return VulnerabilitiesFS(ctx, fsys, dbDir)
}

// VulnerabilitiesFS is Vulnerabilities over a tree already opened through
// sysroot.
func VulnerabilitiesFS(ctx context.Context, fsys sysroot.FS, dbDir string) (*facts.Vulnerabilities, error) {
	inv, err := readInventory(fsys)
	if err != nil {
		return nil, err
	}
	return matchInventory(ctx, inv, dbDir)
}

type vulnCollector struct{ dbDir string }

var _ collector.Collector = vulnCollector{}

// VulnerabilitiesCollector returns the "vulnerabilities" collector, which
// fills packages.Vulnerabilities from the trivy DB in dbDir for whatever target
// the orchestrator scans (rootfs, disk image or host). A target that is not
// Debian or Ubuntu, or has no dpkg database, is not applicable; a DB that
// cannot be used is an error, so the checks that need it error too.
func VulnerabilitiesCollector(dbDir string) collector.Collector { return vulnCollector{dbDir: dbDir} }

func (vulnCollector) Name() string { return "vulnerabilities" }

// Needs containers: the pre-seeded bases it lists, each checked against
// its digests, are matched as well as the target's own packages.
func (vulnCollector) Needs() []string { return []string{"containers"} }

func (c vulnCollector) Collect(ctx context.Context, env *collect.Env, f *facts.Facts) error {
	v, err := VulnerabilitiesFS(ctx, env.FS, c.dbDir)
	switch {
	case errors.Is(err, packages.ErrNoDpkg), errors.Is(err, osinfo.ErrNoOSRelease), errors.Is(err, errUnsupportedOS):
		return collect.NotApplicable(err.Error())
	case err != nil:
		return err
	}
	v.Images, v.ImagesError = c.seededImages(ctx, env, f)
	f.Vulnerabilities = v
	if v.DBDemo {
		// A passing check carries no messages, and the collectors' reasons
		// reach the JSON and HTML reports whatever the checks say.
		return &collect.Outcome{Status: facts.StatusOK, Reason: DemoLabel + " (written by tools/trivydb from a YAML fixture)"}
	}
	return nil
}

// matchInventory runs trivy's OS package detector over inv.
func matchInventory(ctx context.Context, inv *inventory, dbDir string) (*facts.Vulnerabilities, error) {
	meta, err := checkDB(dbDir)
	if err != nil {
		return nil, err
	}
	dbMu.Lock()
	defer dbMu.Unlock()
	if err := probeDB(dbDir); err != nil {
		return nil, err
	}
	// Init would create a missing file; checkDB has refused that case, and
	// ReadOnly makes sure nothing is written to the user's DB.
	if err := db.Init(dbDir, db.WithBoltOptions(&bolt.Options{ReadOnly: true, Timeout: dbOpenTimeout})); err != nil {
		return nil, fmt.Errorf("opening trivy DB in %s: %w", dbDir, err)
	}
	defer db.Close()

	det, err := ospkg.NewDetector(types.ScanTarget{OS: inv.os, Packages: inv.pkgs})
	if err != nil {
		return nil, fmt.Errorf("matching %s %s: %w", inv.os.Family, inv.os.Name, err)
	}
	found, _, err := det.Detect(ctx)
	if err != nil {
		return nil, fmt.Errorf("matching packages against the trivy DB in %s: %w", dbDir, err)
	}
	vulnerability.NewClient(db.Config{}).FillInfo(found, []dbtypes.SourceID{"auto"})

	out := &facts.Vulnerabilities{
		DB:           describeDB(meta),
		DBUpdatedAt:  rfc3339(meta.UpdatedAt),
		DBNextUpdate: rfc3339(meta.NextUpdate),
		DBDemo:       meta.Demo != nil,
		Findings:     make([]facts.Finding, 0, len(found)),
	}
	for _, v := range found {
		f := facts.Finding{
			ID:        v.VulnerabilityID,
			Package:   v.PkgName,
			Installed: v.InstalledVersion,
			Fixed:     v.FixedVersion,
			Severity:  cmp.Or(v.Severity, dbtypes.SeverityUnknown.String()),
		}
		if v.PublishedDate != nil {
			f.Published = v.PublishedDate.UTC().Format(time.RFC3339)
		}
		out.Findings = append(out.Findings, f)
	}
	slices.SortFunc(out.Findings, func(a, b facts.Finding) int {
		return cmp.Or(strings.Compare(a.Package, b.Package), strings.Compare(a.ID, b.ID))
	})
	out.Findings = slices.Compact(out.Findings)
	return out, nil
}

// describeDB names the DB as reports show it.
func describeDB(meta dbMetadata) string {
	date := "of unknown date"
	if !meta.UpdatedAt.IsZero() {
		date = meta.UpdatedAt.UTC().Format(time.DateOnly)
	}
	s := fmt.Sprintf("trivy-db v%d %s", meta.Version, date)
	if meta.Demo != nil {
		s += " (demo"
		if !meta.Demo.AdvisoriesAsOf.IsZero() {
			s += ", advisories as of " + meta.Demo.AdvisoriesAsOf.UTC().Format(time.DateOnly)
		}
		s += ")"
	}
	return s
}

// rfc3339 leaves a time trivy did not set (its zero value, which its
// metadata.json spells 0001-01-01T00:00:00Z) empty, so the policy sees it
// as missing rather than as a DB two thousand years old.
func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// checkDB refuses a DB directory that trivy-db would mishandle: it creates a
// missing trivy.db, and it deletes one it finds corrupt. metadata.json must
// name the schema this trivy reads.
func checkDB(dbDir string) (dbMetadata, error) {
	if dbDir == "" {
		return dbMetadata{}, errors.New("no trivy DB directory given")
	}
	st, err := os.Stat(filepath.Join(dbDir, dbFile))
	if err != nil {
		return dbMetadata{}, fmt.Errorf("trivy DB in %s: %w", dbDir, err)
	}
	if !st.Mode().IsRegular() || st.Size() == 0 {
		return dbMetadata{}, fmt.Errorf("trivy DB in %s: %s is not a non-empty regular file", dbDir, dbFile)
	}
	data, err := readBounded(filepath.Join(dbDir, metadataFile), maxMetadataSize)
	if err != nil {
		return dbMetadata{}, fmt.Errorf("trivy DB in %s: %w", dbDir, err)
	}
	var meta dbMetadata
	if err := json.Unmarshal(data, &meta); err != nil {
		return dbMetadata{}, fmt.Errorf("trivy DB in %s: parsing %s: %w", dbDir, metadataFile, err)
	}
	if meta.Version != db.SchemaVersion {
		return dbMetadata{}, fmt.Errorf("trivy DB in %s: schema version %d, this gpuhost reads %d", dbDir, meta.Version, db.SchemaVersion)
	}
	return meta, nil
}

// readBounded reads a regular file of at most max bytes. The DB directory
// is the operator's, not the target's, but a FIFO there must still not hang
// a scan.
func readBounded(name string, max int64) ([]byte, error) {
	fsys, closer, err := sysroot.Open(filepath.Dir(name))
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	data, err := fsys.ReadFileLimit(filepath.Base(name), max)
	if err != nil && errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", filepath.Base(name), fs.ErrNotExist)
	}
	return data, err
}

// probeDB opens the DB read-only and reads its meta pages, recovering from a
// corrupt file. trivy-db's Init recovers too, but then deletes the file: an
// operator's DB must not vanish because a scan found it damaged.
func probeDB(dbDir string) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("trivy DB in %s is corrupt: %v", dbDir, r)
		}
	}()
	bdb, err := bolt.Open(filepath.Join(dbDir, dbFile), 0, &bolt.Options{ReadOnly: true, Timeout: dbOpenTimeout})
	if err != nil {
		return fmt.Errorf("opening trivy DB in %s: %w", dbDir, err)
	}
	defer bdb.Close()
	err = bdb.View(func(tx *bolt.Tx) error {
		if tx.Bucket([]byte("vulnerability")) == nil {
			return errors.New("no vulnerability bucket")
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("trivy DB in %s: %w", dbDir, err)
	}
	return nil
}
