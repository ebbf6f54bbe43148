//go:build !linux

package osinfo

import "errors"

// statfsMagic is Linux-only; elsewhere the file test decides.
func statfsMagic(string) (int64, error) {
	return 0, errors.ErrUnsupported
}
