package gpu_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/gpu"
	"github.com/gpuhost/gpuhost/reports"
)

// TestRealFacts holds the collector and the GPU checks to the facts of real
// GPU hosts, saved by gpu-check.sh into testdata/real (see its README): each
// document must validate, and every GPU check must evaluate without error.
// A host's gpuhost validate output kept beside them (*.validate.json) must
// name every step once, in order, with a verdict and exit code its steps
// give.
func TestRealFacts(t *testing.T) {
	files, err := filepath.Glob("testdata/real/*.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skip("no real host's facts in testdata/real; gpu-check.sh saves them")
	}
	e := gpuEngine(t, "gpu/")
	for _, file := range files {
		if strings.HasSuffix(file, ".validate.json") {
			t.Run(filepath.Base(file), func(t *testing.T) { checkRealValidation(t, file) })
			continue
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if err := facts.ValidateJSON(data); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			doc, err := engine.ParseDocument(data, file)
			if err != nil {
				t.Fatal(err)
			}
			if st := doc.Collectors["gpu"]; st.Status != facts.StatusOK {
				t.Errorf("gpu collector %s: %s; a real GPU host's facts should have NVML's answers", st.Status, st.Reason)
			}
			results, err := e.Evaluate(context.Background(), doc)
			if err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, r := range results {
				if !strings.HasPrefix(r.ID, "GH-GPU-") {
					continue
				}
				n++
				if r.Status == reports.StatusError {
					t.Errorf("%s: %q", r.ID, r.Messages)
				}
			}
			if n == 0 {
				t.Error("no GPU check ran")
			}
		})
	}
}

// checkRealValidation reads a saved `gpuhost validate --format json`.
func checkRealValidation(t *testing.T, file string) {
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Schema   string `json:"schema"`
		Verdict  string `json:"verdict"`
		ExitCode int    `json:"exit_code"`
		facts.GPUValidation
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range rep.Steps {
		names = append(names, s.Name)
		if s.Status != facts.ValidationPassed && s.Status != facts.ValidationFailed && s.Status != facts.ValidationNotRun {
			t.Errorf("step %s: status %q", s.Name, s.Status)
		}
	}
	codes := map[string]int{gpu.VerdictPassed: 0, gpu.VerdictFailed: 1, gpu.VerdictIncomplete: 2}
	if rep.Schema != "gpuhost.validation/v1" || strings.Join(names, ",") != "driver,container,cuda,fabric,mig" {
		t.Errorf("schema %q, steps %v", rep.Schema, names)
	}
	if got := gpu.Verdict(&rep.GPUValidation); got != rep.Verdict || codes[got] != rep.ExitCode {
		t.Errorf("verdict %s (exit %d) recorded; its steps give %s", rep.Verdict, rep.ExitCode, got)
	}
}
