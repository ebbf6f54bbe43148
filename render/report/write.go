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

// WriteFile renders rep with r into path atomically (AtomicFile): a render
// or write that fails leaves any earlier file at path untouched, so a CI job
// never publishes a half-written report.
func WriteFile(path string, r Renderer, rep *reports.Report) (err error) {
	if r == nil {
		return errors.New("writing report: no renderer")
	}
	f, err := CreateAtomic(path)
	if err != nil {
		return fmt.Errorf("writing %s report: %w", r.Format(), err)
	}
	defer func() {
		if err != nil {
			f.Abort()
		}
	}()
	bw := bufio.NewWriter(f)
	if err := r.Render(bw, rep); err != nil {
		return fmt.Errorf("rendering %s report %s: %w", r.Format(), path, err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("writing %s report %s: %w", r.Format(), path, err)
	}
	if err := f.Commit(); err != nil {
		return fmt.Errorf("writing %s report: %w", r.Format(), err)
	}
	return nil
}

// AtomicFile is a file that appears at its path whole or not at all: it is
// written as a temporary file beside the path, and Commit syncs it, makes it
// world-readable (0644) and renames it over the path; Abort removes it and
// leaves any earlier file at the path untouched.
type AtomicFile struct {
	tmp  *os.File
	path string
	dir  string
}

// CreateAtomic starts an AtomicFile for path.
func CreateAtomic(path string) (*AtomicFile, error) {
	dir, base := filepath.Split(path)
	if base == "" {
		return nil, fmt.Errorf("%q names a directory, not a file", path)
	}
	if dir == "" {
		dir = "."
	}
	// The rename would replace whatever is at path: a device node
	// (-o /dev/stdout), a pipe or a link would become a plain file.
	if fi, err := os.Lstat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file but %s, which a report would replace; name a file, or write to stdout", path, kindOf(fi.Mode()))
	}
	tmp, err := os.CreateTemp(dir, "."+base+".*.tmp")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &AtomicFile{tmp: tmp, path: path, dir: dir}, nil
}

// kindOf names the kind of file m is, for a file that is not a regular one.
func kindOf(m os.FileMode) string {
	switch {
	case m&os.ModeDevice != 0:
		return "a device"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	case m.IsDir():
		return "a directory"
	}
	return "a special file"
}

// Write writes to the temporary file.
func (f *AtomicFile) Write(p []byte) (int, error) { return f.tmp.Write(p) }

// Commit puts the file in place.
func (f *AtomicFile) Commit() error {
	if err := f.tmp.Sync(); err != nil {
		f.Abort()
		return fmt.Errorf("syncing %s: %w", f.path, err)
	}
	// CreateTemp makes the file 0600; a report is meant to be read by the
	// CI system and reviewers, not only by the scanning user.
	if err := f.tmp.Chmod(0o644); err != nil {
		f.Abort()
		return fmt.Errorf("%s: %w", f.path, err)
	}
	if err := f.tmp.Close(); err != nil {
		os.Remove(f.tmp.Name())
		return fmt.Errorf("%s: %w", f.path, err)
	}
	if err := os.Rename(f.tmp.Name(), f.path); err != nil {
		os.Remove(f.tmp.Name())
		return fmt.Errorf("%s: %w", f.path, err)
	}
	// Sync the directory so the rename survives a crash. Some file systems
	// refuse to sync a directory; the file is written either way.
	if d, derr := os.Open(f.dir); derr == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Abort removes the temporary file; the path is left as it was.
func (f *AtomicFile) Abort() {
	f.tmp.Close()
	os.Remove(f.tmp.Name())
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
