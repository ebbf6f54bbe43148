package configerr_test

import (
	"errors"
	"regexp"
	"testing"

	"github.com/gpuhost/gpuhost/builder/gate"
	"github.com/gpuhost/gpuhost/builder/gpu"
	"github.com/gpuhost/gpuhost/builder/internal/configerr"
	"github.com/gpuhost/gpuhost/builder/ngc"
	"github.com/gpuhost/gpuhost/builder/rootfs"
	"github.com/gpuhost/gpuhost/builder/scan"
)

// field is how every problem starts: the field it is about, in the
// template's own spelling, then a colon or a space.
var field = regexp.MustCompile(`^[a-z][a-z0-9_]*(\[[0-9]+\])?(\.[a-z0-9_]+(\[[0-9]+\])?)*( and [a-z_.]+)?[: ]`)

// TestEveryComponentReportsAlike: each component, given a configuration
// with several mistakes, lists them all in one *configerr.Error naming it.
func TestEveryComponentReportsAlike(t *testing.T) {
	bad := map[string]any{"fail_on": "severe", "reports": []string{"pdf"}}
	_, gateErr := gate.Decode(bad)
	_, gpuErr := gpu.Decode(map[string]any{"driver": map[string]any{"version": "x"}, "cuda": map[string]any{"version": "y"}})
	ngcErr := (&ngc.Datasource{}).Configure(map[string]any{"timeout": "-1s"})
	_, rootfsErr := (&rootfs.Config{}).Prepare(map[string]any{"output_format": "iso", "suite": ""})
	_, scanErr := scan.Decode(bad)
	for component, err := range map[string]error{"gpuhost-gate": gateErr, "gpuhost-gpu": gpuErr, "gpuhost-ngc": ngcErr, "gpuhost-rootfs": rootfsErr, "gpuhost-scan": scanErr} {
		var ce *configerr.Error
		if !errors.As(err, &ce) {
			t.Errorf("%s: %v is not a *configerr.Error", component, err)
			continue
		}
		if ce.Component != component || len(ce.Problems) < 2 {
			t.Errorf("%s: component %q, problems %q; want every problem of the bad configuration", component, ce.Component, ce.Problems)
		}
		for _, p := range ce.Problems {
			if !field.MatchString(p) {
				t.Errorf("%s: %q does not start with the field it is about", component, p)
			}
		}
	}
}
