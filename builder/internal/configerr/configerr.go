// Package configerr is how every gpuhost Packer component reports a bad
// configuration: all of its problems at once, one a line, each starting
// with the field it is about ("fail_on: ...", "ngc_images[2].digest: ..."),
// under one line naming the component.
package configerr

import "strings"

// Error is every problem found in one component's configuration.
type Error struct {
	// Component is the plugin type, such as "gpuhost-gate".
	Component string
	// Problems each start with the field they are about.
	Problems []string
}

func (e *Error) Error() string {
	return "invalid " + e.Component + " configuration:\n  " + strings.Join(e.Problems, "\n  ")
}

// Check returns an *Error listing problems, or nil when there are none.
func Check(component string, problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	return &Error{Component: component, Problems: problems}
}
