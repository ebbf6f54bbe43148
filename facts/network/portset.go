package network

import (
	"slices"
)

// portSet's operations: the evaluator works a set of 65,536 ports a word
// at a time.

func (s *portSet) empty() bool {
	for _, w := range s {
		if w != 0 {
			return false
		}
	}
	return true
}

func (s *portSet) fill() {
	for i := range s {
		s[i] = ^uint64(0)
	}
}

func (s *portSet) and(o *portSet) {
	for i := range s {
		s[i] &= o[i]
	}
}

func (s *portSet) andNot(o *portSet) {
	for i := range s {
		s[i] &^= o[i]
	}
}

func (s *portSet) or(o *portSet) {
	for i := range s {
		s[i] |= o[i]
	}
}

func (s *portSet) has(p int) bool { return s[p/64]&(1<<(p%64)) != 0 }

// ranges returns the set as inclusive [from, to] runs, a word at a time
// where words are empty or full.
func (s *portSet) ranges() [][2]int {
	var out [][2]int
	start := -1
	for w, word := range s {
		switch {
		case word == 0 && start < 0, word == ^uint64(0) && start >= 0:
			continue
		case word == 0:
			out = append(out, [2]int{start, w*64 - 1})
			start = -1
			continue
		}
		for b := 0; b < 64; b++ {
			in := word&(1<<b) != 0
			switch {
			case in && start < 0:
				start = w*64 + b
			case !in && start >= 0:
				out = append(out, [2]int{start, w*64 + b - 1})
				start = -1
			}
		}
	}
	if start >= 0 {
		out = append(out, [2]int{start, 65535})
	}
	return out
}

// setRange adds lo..hi a word at a time.
func (s *portSet) setRange(lo, hi int) {
	for lo <= hi {
		w, b := lo/64, lo%64
		if b == 0 && hi-lo >= 63 {
			s[w] = ^uint64(0)
			lo += 64
			continue
		}
		s[w] |= 1 << b
		lo++
	}
}

// setBound is one element of an interval set as the kernel holds it: the
// first port of a run, or (end) the port one past its last.
type setBound struct {
	port int
	end  bool
}

// intervalPorts turns interval set bounds, in any order, into ports.
func intervalPorts(bounds []setBound) portSet {
	var ps portSet
	slices.SortFunc(bounds, func(a, b setBound) int {
		if a.port != b.port {
			return a.port - b.port
		}
		// An end and a start at one port: the end closes the run before.
		switch {
		case a.end == b.end:
			return 0
		case a.end:
			return -1
		}
		return 1
	})
	open := -1
	for _, b := range bounds {
		switch {
		case !b.end && open < 0:
			open = b.port
		case b.end && open >= 0:
			ps.add(open, b.port-1)
			open = -1
		}
	}
	if open >= 0 {
		ps.add(open, 65535)
	}
	return ps
}
