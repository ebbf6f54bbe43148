//go:build !linux

package network

import (
	"errors"
)

// ipv6StateIn has no network namespace to enter outside Linux.
func ipv6StateIn(string) *IPv6State {
	return unknownIPv6(errors.New("entering a network namespace needs Linux"))
}
