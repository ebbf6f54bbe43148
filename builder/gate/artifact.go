package gate

import (
	"errors"
	"os"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/gpuhost/gpuhost/containers/publish"
)

// Artifact is the gated artifact: the input artifact, the reports written
// beside it, and what was published.
type Artifact struct {
	source    packersdk.Artifact
	reports   []string
	published *publish.Result
}

var _ packersdk.Artifact = (*Artifact)(nil)

// BuilderId returns "gpuhost.gate".
func (a *Artifact) BuilderId() string { return BuilderID }

// Files returns the input artifact's files, then the reports.
func (a *Artifact) Files() []string { return append(a.source.Files(), a.reports...) }

// Id returns the pushed reference pinned by digest when the image was
// published, else the input artifact's id.
func (a *Artifact) Id() string {
	if a.published != nil {
		return a.published.Ref + "@" + a.published.Image.Digest
	}
	return a.source.Id()
}

// String describes the gate's outcome for the build's summary.
func (a *Artifact) String() string {
	s := "gpuhost-gate passed: " + a.source.String()
	if a.published != nil {
		s += "\npublished: " + a.Id()
	}
	return s
}

// State returns "reports" ([]string), "published" (*publish.Result, nil
// when nothing was pushed), and otherwise the input artifact's state.
func (a *Artifact) State(name string) interface{} {
	switch name {
	case "reports":
		return append([]string(nil), a.reports...)
	case "published":
		return a.published
	}
	return a.source.State(name)
}

// Destroy removes the reports only: the input artifact belongs to its
// builder, which Packer keeps or destroys on its own.
func (a *Artifact) Destroy() error {
	var errs []error
	for _, r := range a.reports {
		if err := os.Remove(r); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
