//go:build !linux

package network

import (
	"errors"

	"github.com/gpuhost/gpuhost/facts"
)

// ipv6StateIn has no network namespace to enter outside Linux.
func ipv6StateIn(string) *facts.IPv6State {
	return unknownIPv6(errors.New("entering a network namespace needs Linux"))
}
