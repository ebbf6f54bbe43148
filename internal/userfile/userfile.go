// Package userfile reads the files an operator names on the command line or
// in a template: params, waivers, keys, policy bundles, saved facts. They
// are trusted more than a scanned image, but a path can still name a FIFO, a
// device or a runaway file: each is opened without blocking, must be a
// regular file, and is read within a limit, with errors that name the file.
package userfile

import (
	"errors"
	"fmt"
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// Limits on the files an operator names, by kind.
const (
	// MaxKey bounds a PEM key file.
	MaxKey = 64 << 10
	// MaxConfig bounds a params or configuration file.
	MaxConfig = 1 << 20
)

// ErrTooLarge is wrapped by Read's error for a file over its limit.
var ErrTooLarge = errors.New("file too large")

// Open opens name for reading. Opening does not block on a FIFO (O_NONBLOCK,
// cleared again before any read), and anything but a regular file is
// refused naming what it is.
func Open(name string) (*os.File, error) {
	f, err := os.OpenFile(name, os.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%s is %s, not a regular file", name, Kind(st.Mode()))
	}
	// A regular file ignores O_NONBLOCK, but clear it anyway so that the
	// descriptor behaves as a plain open's would.
	if err := unix.SetNonblock(int(f.Fd()), false); err != nil {
		f.Close()
		return nil, fmt.Errorf("opening %s: %w", name, err)
	}
	return f, nil
}

// Read reads name, a regular file of at most limit bytes.
func Read(name string, limit int64) ([]byte, error) {
	f, err := Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s: %w: over the limit of %d bytes", name, ErrTooLarge, limit)
	}
	return data, nil
}

// CheckDir refuses name unless it is a directory.
func CheckDir(name string) error {
	st, err := os.Stat(name)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is %s, not a directory", name, Kind(st.Mode()))
	}
	return nil
}

// Kind names a file mode's type for an error: "a FIFO", "a directory".
func Kind(m os.FileMode) string {
	switch {
	case m.IsRegular():
		return "a regular file"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	case m.IsDir():
		return "a directory"
	case m&os.ModeSymlink != 0:
		return "a symbolic link"
	}
	return "a special file"
}
