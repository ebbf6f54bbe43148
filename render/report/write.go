package report

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gpuhost/gpuhost/reports"
)

// WriteFile renders rep with r into path atomically: it writes a temporary
// file beside path, syncs it, makes it world-readable (0644) and renames it
// over path. A render or write that fails leaves any earlier file at path
// untouched and removes the temporary file, so a CI job never publishes a
// half-written report.
func WriteFile(path string, r Renderer, rep *reports.Report) (err error) {
	if r == nil {
		return errors.New("writing report: no renderer")
	}
	dir, base := filepath.Split(path)
	if base == "" {
		return fmt.Errorf("writing %s report: %q names a directory, not a file", r.Format(), path)
	}
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return fmt.Errorf("writing %s report %s: %w", r.Format(), path, err)
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	bw := bufio.NewWriter(tmp)
	if err := r.Render(bw, rep); err != nil {
		return fmt.Errorf("rendering %s report %s: %w", r.Format(), path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing %s report %s: %w", r.Format(), path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("syncing %s report %s: %w", r.Format(), path, err)
	}
	// CreateTemp makes the file 0600; a report is meant to be read by the
	// CI system and reviewers, not only by the scanning user.
	if err := tmp.Chmod(0o644); err != nil {
		return fmt.Errorf("writing %s report %s: %w", r.Format(), path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("writing %s report %s: %w", r.Format(), path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("writing %s report %s: %w", r.Format(), path, err)
	}
	// Sync the directory so the rename survives a crash. Some file systems
	// refuse to sync a directory; the report is written either way.
	if d, derr := os.Open(dir); derr == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// ParseReportSpec splits a --report value, "FORMAT=PATH" (for example
// "sarif=out/scan.sarif"), and checks that FORMAT is a registered renderer.
// PATH is returned as given; "-" is left for the caller to treat as stdout.
func ParseReportSpec(spec string) (format, path string, err error) {
	format, path, ok := strings.Cut(spec, "=")
	format = strings.TrimSpace(format)
	if !ok || format == "" || path == "" {
		return "", "", fmt.Errorf("invalid report %q: want FORMAT=PATH, e.g. sarif=scan.sarif (formats: %s)",
			spec, strings.Join(Formats(), ", "))
	}
	if _, err := Lookup(format); err != nil {
		return "", "", fmt.Errorf("invalid report %q: %w", spec, err)
	}
	return format, path, nil
}
