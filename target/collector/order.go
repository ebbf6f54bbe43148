package collector

import (
	"fmt"
	"slices"
	"strings"
)

// Order returns cs in an order in which every collector runs after the
// ones it needs. Among collectors free to run, the one whose name sorts
// first goes first, so the order depends on names and needs alone, not on
// how the caller assembled cs. Two collectors with one name, a need that
// names no collector in cs, or collectors that need each other are an
// error naming them: run in any order, some collector would read facts
// that are not there yet.
func Order(cs []Collector) ([]Collector, error) {
	byName := make(map[string]Collector, len(cs))
	for _, c := range cs {
		if _, dup := byName[c.Name()]; dup {
			return nil, fmt.Errorf("ordering collectors: two collectors are named %q", c.Name())
		}
		byName[c.Name()] = c
	}
	waiting := make(map[string]int, len(cs))         // needs not yet run, by name
	dependents := make(map[string][]string, len(cs)) // who needs a name
	for _, c := range cs {
		needs := slices.Clone(c.Needs())
		slices.Sort(needs)
		needs = slices.Compact(needs)
		for _, n := range needs {
			if _, ok := byName[n]; !ok {
				return nil, fmt.Errorf("ordering collectors: %s needs %q, which is not among the collectors", c.Name(), n)
			}
			if n == c.Name() {
				return nil, fmt.Errorf("ordering collectors: %s needs itself", n)
			}
			dependents[n] = append(dependents[n], c.Name())
		}
		waiting[c.Name()] = len(needs)
	}
	var ready []string
	for name, n := range waiting {
		if n == 0 {
			ready = append(ready, name)
		}
	}
	out := make([]Collector, 0, len(cs))
	for len(ready) > 0 {
		slices.Sort(ready)
		name := ready[0]
		ready = ready[1:]
		out = append(out, byName[name])
		delete(waiting, name)
		for _, d := range dependents[name] {
			if waiting[d]--; waiting[d] == 0 {
				ready = append(ready, d)
			}
		}
	}
	if len(waiting) > 0 {
		return nil, fmt.Errorf("ordering collectors: %s", cycle(byName, waiting))
	}
	return out, nil
}

// cycle describes one cycle among the collectors left waiting, each of
// which needs another left waiting: "a needs b needs c needs a".
func cycle(byName map[string]Collector, waiting map[string]int) string {
	left := make([]string, 0, len(waiting))
	for name := range waiting {
		left = append(left, name)
	}
	slices.Sort(left)
	// Walk from the first waiting collector along needs that are waiting
	// too; in a finite graph where each has one, the walk repeats.
	seen := map[string]int{}
	var path []string
	for name := left[0]; ; {
		if i, ok := seen[name]; ok {
			path = append(path[i:], name)
			break
		}
		seen[name] = len(path)
		path = append(path, name)
		needs := slices.Clone(byName[name].Needs())
		slices.Sort(needs)
		for _, n := range needs {
			if _, ok := waiting[n]; ok {
				name = n
				break
			}
		}
	}
	return "collectors need each other: " + strings.Join(path, " needs ")
}
