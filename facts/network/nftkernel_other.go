//go:build !linux

package network

import "errors"

// readKernelRuleset has no kernel to ask outside Linux.
func readKernelRuleset(string) (*fwRuleset, error) {
	return nil, errors.New("reading the nftables ruleset: netlink needs Linux")
}
