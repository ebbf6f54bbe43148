package diff

import (
	"encoding/json"
	"io"
)

type jsonRenderer struct{}

func (jsonRenderer) Format() string { return "json" }

func (jsonRenderer) Render(w io.Writer, d *Diff) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	// Empty lists are [] rather than null, so consumers need not care.
	out := *d
	for _, l := range out.lists() {
		if *l.changes == nil {
			*l.changes = []Change{}
		}
	}
	return enc.Encode(&out)
}
