//go:build !linux

package encryption

import "errors"

// kernelDMTable has no device-mapper to ask off Linux.
func kernelDMTable(root, name string) ([]dmTarget, error) {
	return nil, errors.New("device-mapper is Linux only")
}
