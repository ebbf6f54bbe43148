// Package textfile reads the text files of a scanned tree for the
// collectors: files that may be absent, lines, control characters, the
// shell-style assignments of os-release and /etc/default, and daemon
// configurations that include other files (Source). A collector of any
// domain reads these formats the same way, so their limits and their
// refusals of binary data are written once.
package textfile

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// readlinker is implemented by sysroot views that can read a symlink's
// target without following it. It is asserted rather than required so that
// fakes of sysroot.FS elsewhere keep compiling.
type readlinker interface {
	Readlink(name string) (string, error)
}

// Readlink returns the target of a symlink, or an error when the view cannot
// read links.
func Readlink(fsys sysroot.FS, name string) (string, error) {
	rl, ok := fsys.(readlinker)
	if !ok {
		return "", fmt.Errorf("reading link %s: %w", fsys.Display(name), fs.ErrInvalid)
	}
	return rl.Readlink(name)
}

// CanReadlink says whether the view can read a symlink's target.
func CanReadlink(fsys sysroot.FS) bool {
	_, ok := fsys.(readlinker)
	return ok
}

// ReadOptional reads a file that may legitimately be absent: (nil, false,
// nil) means absent.
func ReadOptional(fsys sysroot.FS, name string) ([]byte, bool, error) {
	data, err := fsys.ReadFile(name)
	if err != nil {
		if sysroot.IsNotExist(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return data, true, nil
}

// ReadOptionalLimit is ReadOptional with a bound of its own.
func ReadOptionalLimit(fsys sysroot.FS, name string, max int64) ([]byte, bool, error) {
	data, err := fsys.ReadFileLimit(name, max)
	if err != nil {
		if sysroot.IsNotExist(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	return data, true, nil
}

// Exists says whether a file is there at all. A loader asks it before it
// loads a main configuration file because a missing include also reads as
// "not exist", and that must be an error, not an absent configuration. Any
// answer other than a clear absence lets the loader report the problem.
func Exists(fsys sysroot.FS, name string) bool {
	_, err := fsys.Stat(name)
	return !sysroot.IsNotExist(err)
}

// Lines splits text into lines without a trailing empty one, dropping CRs.
func Lines(data []byte) []string {
	s := strings.ReplaceAll(string(data), "\r\n", "\n")
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

// ErrBinary is what CheckLine says of a line with a control character.
var ErrBinary = errors.New("binary data (control character)")

// CheckLine refuses control characters other than tab: text files never
// hold them, and a NUL is the surest sign of a corrupt or planted file.
// Bytes >= 0x80 are allowed because old packages carry Latin-1 descriptions.
func CheckLine(line []byte) error {
	for _, c := range line {
		if (c < 0x20 && c != '\t') || c == 0x7f {
			return ErrBinary
		}
	}
	return nil
}

// Truncate shortens s to n bytes for an error message, marking the cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
