// Package devmapper keeps device-mapper's control node as it was found.
package devmapper

import (
	"errors"
	"io/fs"
	"os"
)

// Keep returns a function that removes /dev/mapper/control and /dev/mapper
// where they did not exist when Keep was called: cryptsetup, run as root,
// makes the control node when it is missing, even for a file and on a
// kernel without device-mapper, and a build or a test leaves the machine
// as it found it.
func Keep() func() {
	_, dirErr := os.Lstat("/dev/mapper")
	_, ctlErr := os.Lstat("/dev/mapper/control")
	return func() {
		if errors.Is(ctlErr, fs.ErrNotExist) {
			_ = os.Remove("/dev/mapper/control")
		}
		if errors.Is(dirErr, fs.ErrNotExist) {
			_ = os.Remove("/dev/mapper")
		}
	}
}
