// Package config parses configuration files read from an untrusted tree
// (openssl.cnf, nginx, sshd_config, containerd, docker, CDI specs) and fills
// the tls, ssh and container_runtime facts from them. Each parser is a pure
// function over bytes plus a Source that resolves includes, so that the same
// code serves the collectors, the tests and the fuzzers.
package config

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/gpuhost/gpuhost/checks/collector"
	"github.com/gpuhost/gpuhost/checks/sysroot"
)

// Limits on what one configuration may make us read. Real configurations are
// a few files of a few kilobytes; anything past these is hostile or broken.
const (
	// maxConfigBytes bounds one configuration file.
	maxConfigBytes = 2 << 20
	// maxIncludeDepth bounds nested includes.
	maxIncludeDepth = 8
	// maxIncludeFiles bounds the files one configuration may pull in.
	maxIncludeFiles = 256
)

// Source is what the parsers need to follow includes. sysroot.FS satisfies it;
// tests and fuzzers use an in-memory one.
type Source interface {
	ReadFileLimit(name string, max int64) ([]byte, error)
	Stat(name string) (fs.FileInfo, error)
	Glob(pattern string) ([]string, error)
	Display(name string) string
}

var _ Source = (sysroot.FS)(nil)

// Collectors returns the collectors of this package: tls, ssh and
// container_runtime.
func Collectors() []collector.Collector {
	return []collector.Collector{tlsCollector{}, sshCollector{}, runtimeCollector{}}
}

// noSource refuses every include, for parsing a lone buffer.
type noSource struct{}

var _ Source = noSource{}

func (noSource) ReadFileLimit(name string, _ int64) ([]byte, error) {
	return nil, &fs.PathError{Op: "reading", Path: name, Err: fs.ErrNotExist}
}
func (noSource) Stat(name string) (fs.FileInfo, error) {
	return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}
func (noSource) Glob(string) ([]string, error) { return nil, nil }
func (noSource) Display(name string) string    { return name }

// checkText refuses binary data. A NUL byte never belongs in a text
// configuration, and parsing such a file would only yield nonsense facts.
func checkText(data []byte) error {
	if i := bytes.IndexByte(data, 0); i >= 0 {
		return fmt.Errorf("line %d: binary data (NUL byte)", 1+bytes.Count(data[:i], []byte{'\n'}))
	}
	return nil
}

// readText reads one configuration file and refuses binary data.
func readText(src Source, name string) ([]byte, error) {
	data, err := src.ReadFileLimit(name, maxConfigBytes)
	if err != nil {
		return nil, err
	}
	if err := checkText(data); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", src.Display(name), err)
	}
	return data, nil
}

// globSorted expands pattern (root-relative, made absolute against base when
// relative) and returns the matches in lexical order with a leading "/".
// A pattern without metacharacters yields itself, so that a missing file is
// reported by the reader, as the daemons themselves do.
func globSorted(src Source, base, pattern string) ([]string, error) {
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

// lineOf returns the 1-based line number of byte offset off in data.
func lineOf(data []byte, off int) int {
	if off > len(data) {
		off = len(data)
	}
	if off < 0 {
		off = 0
	}
	return 1 + bytes.Count(data[:off], []byte{'\n'})
}
