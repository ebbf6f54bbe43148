package gpu_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/reports"
)

// TestRealFacts holds the collector and the GPU checks to the facts of real
// GPU hosts, saved by gpu-check.sh into testdata/real (see its README): each
// document must validate, and every GPU check must evaluate without error.
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
