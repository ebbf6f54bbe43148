package agent

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// csvCounter is one line of dcgm-exporter's counters file.
type csvCounter struct {
	name, kind, help string
	enabled          bool
}

// readCounters reads testdata/dcgm-exporter/default-counters.csv: the
// enabled lines and the commented-out ones shaped like them.
func readCounters(t *testing.T) []csvCounter {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "dcgm-exporter", "default-counters.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []csvCounter
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, commented := strings.CutPrefix(strings.TrimSpace(sc.Text()), "#")
		parts := strings.SplitN(line, ",", 3)
		name := strings.TrimSpace(parts[0])
		if len(parts) != 3 || !strings.HasPrefix(name, "DCGM_") {
			continue
		}
		out = append(out, csvCounter{name: name, kind: strings.TrimSpace(parts[1]), help: strings.TrimSpace(parts[2]), enabled: !commented})
	}
	if len(out) < 25 {
		t.Fatalf("read %d counters from the fixture", len(out))
	}
	return out
}

// notExported are dcgm-exporter's default metrics the agent leaves out,
// other than the profiling ones, and why.
var notExported = map[string]string{
	"DCGM_FI_DEV_VGPU_LICENSE_STATUS": "a vGPU's license: DCGM has no value for it on a bare-metal GPU, and dcgm-exporter then exports nothing either",
}

// Every metric the agent shares with dcgm-exporter has its name, type and
// help text, and every default of dcgm-exporter's is exported, needs DCGM's
// profiling module, or is named in notExported with the reason.
func TestGPUFamiliesAreDCGMExportersDefaults(t *testing.T) {
	kind := map[prometheus.ValueType]string{prometheus.GaugeValue: "gauge", prometheus.CounterValue: "counter"}
	for _, c := range readCounters(t) {
		f := familyByName[c.name]
		switch {
		case f != nil && c.name == "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL":
			// DCGM's value is a rate (gpufamilies.go says why it is a gauge).
			if f.kind != prometheus.GaugeValue {
				t.Errorf("%s is a %s", c.name, kind[f.kind])
			}
		case f != nil:
			if kind[f.kind] != c.kind || f.help != c.help {
				t.Errorf("%s: %s %q, dcgm-exporter declares %s %q", c.name, kind[f.kind], f.help, c.kind, c.help)
			}
		case !c.enabled:
		case c.kind == "label":
			if !slices.Contains(gpuLabels, c.name) {
				t.Errorf("dcgm-exporter's label %s is not a label of the GPU series", c.name)
			}
		case strings.HasPrefix(c.name, "DCGM_FI_PROF_"):
			if !slices.Contains(DCGMNeedsProfiling, c.name) {
				t.Errorf("%s needs DCGM's profiling module but is not in DCGMNeedsProfiling", c.name)
			}
		case notExported[c.name] == "":
			t.Errorf("dcgm-exporter's default %s (%s) is not exported", c.name, c.kind)
		}
	}
}
