package summary

import (
	"encoding/json"
	"fmt"
	"io"

	"github.com/gpuhost/gpuhost/scan"
)

type jsonRenderer struct{}

func (jsonRenderer) Format() string { return "json" }

// Render writes the summary as one indented JSON document, its rows in the
// table's order.
func (jsonRenderer) Render(w io.Writer, s *scan.FleetSummary) error {
	out := *s
	out.Checks = s.Rows()
	b, err := json.MarshalIndent(&out, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the summary: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
