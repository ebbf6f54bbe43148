// Package nodemark marks the Kubernetes node the agent runs on where the
// scheduler and operators see it: while the node fails a critical or high
// check it carries a label, an annotation naming the failing checks and,
// when asked, a NoSchedule taint; once it passes they are removed.
//
// It talks to the API server as a pod does: the in-cluster address from
// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT, and the service
// account's token and CA from the mounted directory. A run reads its node
// and sends one strategic merge patch when the marks differ, so plain
// net/http does, without client-go.
package nodemark

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// The marks, all under Prefix: the admission policy in deploy/kubernetes
// lets the agent change nothing else on its node.
const (
	// Prefix starts every key the agent sets.
	Prefix = "gpuhost.dev/"
	// Label is set to "false" while the node is marked.
	Label = Prefix + "compliant"
	// Annotation lists the failing checks, sorted and comma-separated.
	Annotation = Prefix + "failing-checks"
	// Taint is the key of the NoSchedule taint WithTaint adds.
	Taint = Prefix + "noncompliant"
)

// DefaultServiceAccountDir is where Kubernetes mounts a pod's service
// account token, CA and namespace.
const DefaultServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// maxAnnotation bounds the annotation: a node failing a whole pack must not
// grow its object without bound, and the metrics and report name them all.
const maxAnnotation = 1024

// Marker sets the marks of one node.
type Marker interface {
	// Mark marks the node when failing names any check and removes the
	// marks when it is empty.
	Mark(ctx context.Context, failing []string) error
}

// StatusError is an answer from the API server other than 200, with what
// its Status said.
type StatusError struct {
	Code    int
	Reason  string
	Message string
}

func (e *StatusError) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("API server answered %d", e.Code)
	}
	return fmt.Sprintf("API server answered %d %s: %s", e.Code, e.Reason, e.Message)
}

// Option sets what a Marker marks and how it reaches the API server.
type Option func(*marker)

// WithLabel sets the label and the annotation.
func WithLabel() Option { return func(m *marker) { m.label = true } }

// WithTaint sets the NoSchedule taint.
func WithTaint() Option { return func(m *marker) { m.taint = true } }

// WithServiceAccountDir reads the token and ca.crt from dir instead of
// DefaultServiceAccountDir.
func WithServiceAccountDir(dir string) Option { return func(m *marker) { m.saDir = dir } }

// WithTimeout bounds one patch, connection included (10s by default).
func WithTimeout(d time.Duration) Option { return func(m *marker) { m.timeout = d } }

type marker struct {
	node, url    string
	label, taint bool
	saDir        string
	timeout      time.Duration
}

// nodeName is a DNS subdomain, what Kubernetes accepts as a node's name.
var nodeName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$`)

// New returns a Marker of node, the node the agent runs on, addressed as a
// pod addresses the API server. It fails when the agent does not run in a
// pod or the service account's credentials are not mounted, so that a
// DaemonSet without them says so at start rather than at every run.
func New(node string, opts ...Option) (Marker, error) {
	m := &marker{node: node, saDir: DefaultServiceAccountDir, timeout: 10 * time.Second}
	for _, o := range opts {
		o(m)
	}
	if !nodeName.MatchString(node) {
		return nil, fmt.Errorf("node name %q: not a Kubernetes node name (set --node-name, or NODE_NAME from spec.nodeName)", node)
	}
	if !m.label && !m.taint {
		return nil, errors.New("nothing to mark: want the label, the taint or both")
	}
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, errors.New("not in a Kubernetes pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set")
	}
	m.url = "https://" + net.JoinHostPort(host, port) + "/api/v1/nodes/" + url.PathEscape(node)
	if _, _, err := m.credentials(); err != nil {
		return nil, err
	}
	return m, nil
}

// credentials reads the token and the CA afresh: a projected token is
// replaced by the kubelet well before it expires, and the CA may rotate.
func (m *marker) credentials() (string, *x509.CertPool, error) {
	tok, err := os.ReadFile(filepath.Join(m.saDir, "token"))
	if err != nil {
		return "", nil, fmt.Errorf("reading the service account token: %w", err)
	}
	token := strings.TrimSpace(string(tok))
	if token == "" {
		return "", nil, fmt.Errorf("the service account token %s is empty", filepath.Join(m.saDir, "token"))
	}
	ca, err := os.ReadFile(filepath.Join(m.saDir, "ca.crt"))
	if err != nil {
		return "", nil, fmt.Errorf("reading the API server's CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(ca) {
		return "", nil, fmt.Errorf("%s holds no PEM certificate", filepath.Join(m.saDir, "ca.crt"))
	}
	return token, pool, nil
}
