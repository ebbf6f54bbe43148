// Package deploy holds the systemd units, Kubernetes manifests and
// Prometheus rules that run the agent, and renders the DaemonSet with the
// agent's image by digest; its tests keep them honest.
package deploy

import (
	"bytes"
	_ "embed"
	"fmt"
	"io"
	"text/template"

	"github.com/google/go-containerregistry/pkg/name"
)

//go:embed kubernetes/daemonset.yaml.tmpl
var daemonSetTemplate string

var daemonSet = template.Must(template.New("daemonset.yaml").Option("missingkey=error").Parse(daemonSetTemplate))

// RenderDaemonSet writes the agent's DaemonSet with image, which must name
// its image by digest (REPOSITORY@sha256:...): a tag could move to an image
// that nobody built or gated.
func RenderDaemonSet(w io.Writer, image string) error {
	if _, err := name.NewDigest(image, name.StrictValidation); err != nil {
		return fmt.Errorf("agent image %q: not a reference by digest (REPOSITORY@sha256:...): %w", image, err)
	}
	var b bytes.Buffer
	if err := daemonSet.Execute(&b, struct{ Image string }{image}); err != nil {
		return fmt.Errorf("rendering the DaemonSet: %w", err)
	}
	_, err := w.Write(b.Bytes())
	return err
}
