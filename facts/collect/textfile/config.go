package textfile

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// Limits on what one daemon configuration (openssl, nginx, sshd,
// containerd, docker, CDI) may make us read. Real configurations are a few
// files of a few kilobytes; anything past these is hostile or broken.
const (
	// MaxConfigBytes bounds one configuration file.
	MaxConfigBytes = 2 << 20
	// MaxIncludeDepth bounds nested includes.
	MaxIncludeDepth = 8
	// MaxIncludeFiles bounds the files one configuration may pull in.
	MaxIncludeFiles = 256
)

// Source is what the configuration parsers need to follow includes; each
// parser is a pure function over bytes plus a Source, so that the same code
// serves the collectors, the tests and the fuzzers. sysroot.FS satisfies
// it; tests and fuzzers use an in-memory one.
type Source interface {
	ReadFileLimit(name string, max int64) ([]byte, error)
	Stat(name string) (fs.FileInfo, error)
	Glob(pattern string) ([]string, error)
	Display(name string) string
}

var _ Source = (sysroot.FS)(nil)

// NoSource refuses every include, for parsing a lone buffer.
type NoSource struct{}

var _ Source = NoSource{}

// ReadFileLimit says that name does not exist.
func (NoSource) ReadFileLimit(name string, _ int64) ([]byte, error) {
	return nil, &fs.PathError{Op: "reading", Path: name, Err: fs.ErrNotExist}
}

// Stat says that name does not exist.
func (NoSource) Stat(name string) (fs.FileInfo, error) {
	return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

// Glob matches nothing.
func (NoSource) Glob(string) ([]string, error) { return nil, nil }

// Display returns name as it is.
func (NoSource) Display(name string) string { return name }

// CheckText refuses binary data. A NUL byte never belongs in a text
// configuration, and parsing such a file would only yield nonsense facts.
func CheckText(data []byte) error {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return fmt.Errorf("line %d: binary data (NUL byte)", 1+bytes.Count(data[:i], []byte{'\n'}))
	}
	return nil
}

// ReadText reads one configuration file and refuses binary data.
func ReadText(src Source, name string) ([]byte, error) {
	data, err := src.ReadFileLimit(name, MaxConfigBytes)
	if err != nil {
		return nil, err
	}
	if err := CheckText(data); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", src.Display(name), err)
	}
	return data, nil
}

// GlobSorted expands pattern (root-relative, made absolute against base when
// relative) and returns the matches in lexical order with a leading "/".
// A pattern without metacharacters yields itself, so that a missing file is
// reported by the reader, as the daemons themselves do.
func GlobSorted(src Source, base, pattern string) ([]string, error) {
	if !path.IsAbs(pattern) {
		pattern = path.Join(base, pattern)
	}
	pattern = path.Clean(pattern)
	if !strings.ContainsAny(pattern, "*?[") {
		return []string{pattern}, nil
	}
	matches, err := src.Glob(pattern)
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(matches))
	for _, m := range matches {
		out = append(out, path.Clean("/"+m))
	}
	slices.Sort(out)
	return out, nil
}

// LineOf returns the 1-based line number of byte offset off in data.
func LineOf(data []byte, off int) int {
	if off > len(data) {
		off = len(data)
	}
	if off < 0 {
		off = 0
	}
	return 1 + bytes.Count(data[:off], []byte{'\n'})
}
