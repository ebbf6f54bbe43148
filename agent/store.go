package agent

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"

	// The pure-Go driver: the agent ships as one static binary, no cgo.
	_ "modernc.org/sqlite"

	"github.com/gpuhost/gpuhost/reports"
)

// timeLayout is fixed-width UTC, so started_at sorts and compares as text.
const timeLayout = "2006-01-02T15:04:05.000Z"

// schema is the history table. One row is one completed run.
const schema = `CREATE TABLE IF NOT EXISTS runs (
	id INTEGER PRIMARY KEY,
	started_at TEXT NOT NULL,
	duration_ms INTEGER NOT NULL,
	exit_code INTEGER NOT NULL,
	target TEXT NOT NULL,
	policy_digest TEXT NOT NULL,
	facts_digest TEXT NOT NULL,
	summary_json TEXT NOT NULL,
	report_json TEXT
);
CREATE INDEX IF NOT EXISTS runs_started_at ON runs(started_at);`

// RunRecord is one completed agent run as the history keeps it.
type RunRecord struct {
	ID           int64
	StartedAt    time.Time
	Duration     time.Duration
	ExitCode     int
	Target       string
	PolicyDigest string
	FactsDigest  string
	// Summary is the report's summary; zero when the run produced no report.
	Summary reports.Summary
	// Error is why the run produced no report, empty when it did.
	Error string
	// Report is the full report; List leaves it nil, Get fills it.
	Report *reports.Report
}

// Retention bounds the history; a zero field keeps everything on that axis.
type Retention struct {
	MaxAge  time.Duration
	MaxRuns int
}

// Store is the run history in an embedded SQLite database.
type Store struct {
	db   *sql.DB
	path string
}

// OpenStore opens (creating when absent) the history at path in WAL mode, so
// a reader never blocks the writer and a killed writer loses no committed run.
func OpenStore(ctx context.Context, path string) (*Store, error) {
	return openStore(ctx, path, false)
}

// OpenStoreReadOnly opens an existing history for reading only, as `gpuhost
// history` does: it must not create a database where none was.
func OpenStoreReadOnly(ctx context.Context, path string) (*Store, error) {
	return openStore(ctx, path, true)
}

func openStore(ctx context.Context, path string, readOnly bool) (*Store, error) {
	if path == "" {
		return nil, errors.New("opening history: no database path")
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	if readOnly {
		q.Add("mode", "ro")
	} else {
		q.Add("_pragma", "journal_mode(WAL)")
		q.Add("_pragma", "synchronous(NORMAL)")
	}
	dsn := "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("opening history %s: %w", path, err)
	}
	// One connection: the agent writes from one goroutine, and a single
	// connection keeps the pragmas applied to every statement.
	db.SetMaxOpenConns(1)
	s := &Store{db: db, path: path}
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("opening history %s: %w", path, err)
	}
	if !readOnly {
		if _, err := db.ExecContext(ctx, schema); err != nil {
			db.Close()
			return nil, fmt.Errorf("opening history %s: %w", path, err)
		}
	}
	return s, nil
}

// Path is the database file.
func (s *Store) Path() string { return s.path }

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// Insert records one completed run and applies retention, in one
// transaction: either the run and its pruning are on disk, or neither is.
// It returns the run's id.
func (s *Store) Insert(ctx context.Context, r *RunRecord, keep Retention) (int64, error) {
	sum, err := json.Marshal(summaryRow{Summary: r.Summary, Error: r.Error})
	if err != nil {
		return 0, fmt.Errorf("recording run: %w", err)
	}
	var rep sql.NullString
	if r.Report != nil {
		b, err := json.Marshal(r.Report)
		if err != nil {
			return 0, fmt.Errorf("recording run: %w", err)
		}
		rep = sql.NullString{String: string(b), Valid: true}
	}
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("recording run in %s: %w", s.path, err)
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT INTO runs(started_at, duration_ms, exit_code, target, policy_digest, facts_digest, summary_json, report_json)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
		r.StartedAt.UTC().Format(timeLayout), r.Duration.Milliseconds(), r.ExitCode, r.Target,
		r.PolicyDigest, r.FactsDigest, string(sum), rep)
	if err != nil {
		return 0, fmt.Errorf("recording run in %s: %w", s.path, err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return 0, fmt.Errorf("recording run in %s: %w", s.path, err)
	}
	if keep.MaxAge > 0 {
		cutoff := r.StartedAt.Add(-keep.MaxAge).UTC().Format(timeLayout)
		// Never prune the run just written, however old its clock says it is.
		if _, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE started_at < ? AND id <> ?`, cutoff, id); err != nil {
			return 0, fmt.Errorf("pruning history in %s: %w", s.path, err)
		}
	}
	if keep.MaxRuns > 0 {
		if _, err := tx.ExecContext(ctx, `DELETE FROM runs WHERE id NOT IN (SELECT id FROM runs ORDER BY id DESC LIMIT ?)`, keep.MaxRuns); err != nil {
			return 0, fmt.Errorf("pruning history in %s: %w", s.path, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("recording run in %s: %w", s.path, err)
	}
	return id, nil
}

// summaryRow is summary_json: the report's summary, or the run's error.
type summaryRow struct {
	reports.Summary
	Error string `json:"error,omitempty"`
}

// List returns up to limit runs, newest first, without their reports.
func (s *Store) List(ctx context.Context, limit int) ([]RunRecord, error) {
	if limit <= 0 {
		limit = -1
	}
	rows, err := s.db.QueryContext(ctx, `SELECT id, started_at, duration_ms, exit_code, target, policy_digest, facts_digest, summary_json
		FROM runs ORDER BY id DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("reading history %s: %w", s.path, err)
	}
	defer rows.Close()
	var out []RunRecord
	for rows.Next() {
		r, err := scanRun(rows, nil)
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("reading history %s: %w", s.path, err)
	}
	return out, nil
}

// ErrNoRun is returned by Get and Latest when there is no such run.
var ErrNoRun = errors.New("no such run")

// Get returns one run with its report (nil when the run produced none).
func (s *Store) Get(ctx context.Context, id int64) (*RunRecord, error) {
	return s.one(ctx, `WHERE id = ?`, id)
}

// Latest returns the newest run with its report.
func (s *Store) Latest(ctx context.Context) (*RunRecord, error) {
	return s.one(ctx, `ORDER BY id DESC LIMIT 1`)
}

func (s *Store) one(ctx context.Context, where string, args ...any) (*RunRecord, error) {
	row := s.db.QueryRowContext(ctx, `SELECT id, started_at, duration_ms, exit_code, target, policy_digest, facts_digest, summary_json, report_json
		FROM runs `+where, args...)
	var rep sql.NullString
	r, err := scanRun(row, &rep)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNoRun
	}
	if err != nil {
		return nil, err
	}
	if rep.Valid {
		var out reports.Report
		if err := json.Unmarshal([]byte(rep.String), &out); err != nil {
			return nil, fmt.Errorf("history %s run %d: report: %w", s.path, r.ID, err)
		}
		r.Report = &out
	}
	return r, nil
}

// RawReport returns the stored JSON report of a run, as written.
func (s *Store) RawReport(ctx context.Context, id int64) ([]byte, error) {
	var rep sql.NullString
	err := s.db.QueryRowContext(ctx, `SELECT report_json FROM runs WHERE id = ?`, id).Scan(&rep)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && !rep.Valid) {
		return nil, ErrNoRun
	}
	if err != nil {
		return nil, fmt.Errorf("reading history %s: %w", s.path, err)
	}
	return []byte(rep.String), nil
}

// LatestReport returns the JSON report of the newest run that produced one.
func (s *Store) LatestReport(ctx context.Context) ([]byte, error) {
	var rep string
	err := s.db.QueryRowContext(ctx, `SELECT report_json FROM runs WHERE report_json IS NOT NULL ORDER BY id DESC LIMIT 1`).Scan(&rep)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, ErrNoRun
	}
	if err != nil {
		return nil, fmt.Errorf("reading history %s: %w", s.path, err)
	}
	return []byte(rep), nil
}

// Writable reports, by taking and releasing the write lock, whether a run
// could be recorded now; nil when it could.
func (s *Store) Writable(ctx context.Context) error {
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("history %s: %w", s.path, err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		return fmt.Errorf("history %s not writable: %w", s.path, err)
	}
	// Only a write shows a read-only database; rolled back, it stays in the
	// page cache and never reaches the disk.
	_, werr := conn.ExecContext(ctx, `INSERT INTO runs(started_at, duration_ms, exit_code, target, policy_digest, facts_digest, summary_json)
		VALUES ('', 0, 0, '', '', '', '{}')`)
	if _, err := conn.ExecContext(ctx, `ROLLBACK`); err != nil && werr == nil {
		werr = err
	}
	if werr != nil {
		return fmt.Errorf("history %s not writable: %w", s.path, werr)
	}
	return nil
}

// Count returns the number of runs kept.
func (s *Store) Count(ctx context.Context) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM runs`).Scan(&n); err != nil {
		return 0, fmt.Errorf("reading history %s: %w", s.path, err)
	}
	return n, nil
}

// Check runs SQLite's integrity check and returns its verdict ("ok" when
// the file is sound).
func (s *Store) Check(ctx context.Context) (string, error) {
	var v string
	if err := s.db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&v); err != nil {
		return "", fmt.Errorf("checking history %s: %w", s.path, err)
	}
	return v, nil
}

type scanner interface{ Scan(dest ...any) error }

func scanRun(sc scanner, rep *sql.NullString) (*RunRecord, error) {
	var r RunRecord
	var started, sum string
	var ms int64
	dest := []any{&r.ID, &started, &ms, &r.ExitCode, &r.Target, &r.PolicyDigest, &r.FactsDigest, &sum}
	if rep != nil {
		dest = append(dest, rep)
	}
	if err := sc.Scan(dest...); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		return nil, fmt.Errorf("reading history: %w", err)
	}
	t, err := time.Parse(timeLayout, started)
	if err != nil {
		return nil, fmt.Errorf("reading history: run %d: started_at %q: %w", r.ID, started, err)
	}
	r.StartedAt = t
	r.Duration = time.Duration(ms) * time.Millisecond
	var row summaryRow
	if err := json.Unmarshal([]byte(sum), &row); err != nil {
		return nil, fmt.Errorf("reading history: run %d: summary: %w", r.ID, err)
	}
	r.Summary, r.Error = row.Summary, row.Error
	return &r, nil
}
