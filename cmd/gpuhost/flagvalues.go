package main

import (
	"fmt"
	"slices"
	"strings"

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
	r, err := report.Lookup(format)
	if err != nil {
		return err
	}
	*v.specs = append(*v.specs, reportSpec{format: format, path: path, renderer: r})
	return nil
}
