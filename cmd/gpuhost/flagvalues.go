package main

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuhost/gpuhost/render/report"
)

// Flags whose values come from a fixed set are checked when cobra parses
// them, so that a bad value is a usage error (exit 2, with the command's
// usage) before any work starts, and the command reads a value that is
// already known good instead of checking it again where it uses it.

// choiceValue is a string flag that takes one of choices; optional also
// admits the empty string, for a flag whose default is "never".
type choiceValue struct {
	value    *string
	choices  []string
	optional bool
}

// choiceVar binds p to a flag that takes one of choices, defaulting to def.
func choiceVar(p *string, def string, choices ...string) *choiceValue {
	*p = def
	return &choiceValue{value: p, choices: choices}
}

// optionalChoiceVar is choiceVar for a flag that may be left empty.
func optionalChoiceVar(p *string, choices ...string) *choiceValue {
	v := choiceVar(p, "", choices...)
	v.optional = true
	return v
}

func (v *choiceValue) String() string { return *v.value }
func (v *choiceValue) Type() string   { return "string" }

func (v *choiceValue) Set(s string) error {
	if !slices.Contains(v.choices, s) && (s != "" || !v.optional) {
		return fmt.Errorf("want one of %s", strings.Join(v.choices, ", "))
	}
	*v.value = s
	return nil
}

// reportSpec is one --report FORMAT=PATH, parsed.
type reportSpec struct {
	format, path string
	renderer     report.Renderer
}

// reportsValue is the repeatable --report flag.
type reportsValue struct{ specs *[]reportSpec }

func (v reportsValue) Type() string { return "FORMAT=PATH" }

func (v reportsValue) String() string {
	if v.specs == nil {
		return ""
	}
	out := make([]string, len(*v.specs))
	for i, s := range *v.specs {
		out[i] = s.format + "=" + s.path
	}
	return strings.Join(out, ",")
}

func (v reportsValue) Set(s string) error {
	format, path, err := report.ParseReportSpec(s)
	if err != nil {
		return err
	}
	if err := outputProblem(path); err != nil {
		return err
	}
	r, err := report.Lookup(format)
	if err != nil {
		return err
	}
	*v.specs = append(*v.specs, reportSpec{format: format, path: path, renderer: r})
	return nil
}

// countValue is an int flag that counts something done at once: 0 or a
// negative number would mean nothing is ever done, or a default the
// command line does not show.
type countValue struct{ value *int }

func countVar(p *int, def int) *countValue {
	*p = def
	return &countValue{p}
}

func (v *countValue) String() string { return strconv.Itoa(*v.value) }
func (v *countValue) Type() string   { return "int" }

func (v *countValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return fmt.Errorf("want a whole number, 1 or more")
	}
	*v.value = n
	return nil
}

// timeoutValue is a duration flag that bounds a wait: 0 or less would give
// up at once, on every probe.
type timeoutValue struct{ value *time.Duration }

func timeoutVar(p *time.Duration, def time.Duration) *timeoutValue {
	*p = def
	return &timeoutValue{p}
}

func (v *timeoutValue) String() string { return v.value.String() }
func (v *timeoutValue) Type() string   { return "duration" }

func (v *timeoutValue) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return fmt.Errorf("want a duration above zero, such as 2s or 500ms")
	}
	*v.value = d
	return nil
}

// choiceListValue is a repeatable flag whose values, each one of choices,
// may also be given comma-separated.
type choiceListValue struct {
	values  *[]string
	choices []string
}

// choiceListVar binds p to a list flag of values from choices.
func choiceListVar(p *[]string, choices ...string) *choiceListValue {
	return &choiceListValue{values: p, choices: choices}
}

func (v *choiceListValue) String() string { return strings.Join(*v.values, ",") }
func (v *choiceListValue) Type() string   { return "strings" }

func (v *choiceListValue) Set(s string) error {
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if !slices.Contains(v.choices, part) {
			return fmt.Errorf("%q: want one or more of %s", part, strings.Join(v.choices, ", "))
		}
		if !slices.Contains(*v.values, part) {
			*v.values = append(*v.values, part)
		}
	}
	return nil
}

// exitCodeValue is --exit-code: the code a failing scan exits with. 0
// would hide a failure (--fail-on none says that plainly), 2 would read as
// a scan that cannot be trusted, and past 125 shells give codes their own
// meanings.
type exitCodeValue struct{ value *int }

func (v exitCodeValue) String() string {
	if *v.value == 0 {
		return "1"
	}
	return strconv.Itoa(*v.value)
}
func (v exitCodeValue) Type() string { return "int" }

func (v exitCodeValue) Set(s string) error {
	n, err := strconv.Atoi(s)
	switch {
	case err != nil || n < 0 || n > 125:
		return fmt.Errorf("want 1, or 3 to 125")
	case n == 0:
		return fmt.Errorf("0 would pass a failing scan; --fail-on none makes the scan advisory")
	case n == 2:
		return fmt.Errorf("2 is the exit code of a scan that cannot be trusted; want 1, or 3 to 125")
	}
	*v.value = n
	return nil
}
