package nodemark

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// The marker is held to a real API server, RBAC and admission policy in
// deploy/nodemark_test.go; these are the edges that test does not reach.

func TestAnnotationIsSortedAndBounded(t *testing.T) {
	if got := annotation([]string{"GH-B", "GH-A", "GH-B"}); got != "GH-A,GH-B" {
		t.Errorf("annotation = %q, want GH-A,GH-B", got)
	}
	var ids []string
	for i := range 500 {
		ids = append(ids, fmt.Sprintf("GH-X-%03d", i))
	}
	got := annotation(ids)
	if len(got) > maxAnnotation {
		t.Errorf("annotation of 500 ids is %d bytes, over %d", len(got), maxAnnotation)
	}
	parts := strings.Split(got, ",")
	last := parts[len(parts)-1]
	if want := fmt.Sprintf("+%d more", 500-(len(parts)-1)); last != want {
		t.Errorf("annotation ends %q, want %q", last, want)
	}
	for _, p := range parts[:len(parts)-1] {
		if len(p) != len("GH-X-000") {
			t.Errorf("an id was cut: %q", p)
		}
	}
}

func serviceAccount(t *testing.T, token, ca string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range map[string]string{"token": token, "ca.crt": ca} {
		if data != "" {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func TestNewRefusesWhatCannotWork(t *testing.T) {
	t.Setenv("KUBERNETES_SERVICE_HOST", "127.0.0.1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "6443")
	ca := string(testutil.NewCA(t).PEM())
	good := serviceAccount(t, "tok\n", ca)
	cases := []struct {
		name, node string
		opts       []Option
		want       string
	}{
		{"no node name", "", []Option{WithLabel(), WithServiceAccountDir(good)}, "not a Kubernetes node name"},
		{"a path in the name", "node-a/status", []Option{WithLabel(), WithServiceAccountDir(good)}, "not a Kubernetes node name"},
		{"nothing to mark", "node-a", []Option{WithServiceAccountDir(good)}, "nothing to mark"},
		{"no token", "node-a", []Option{WithTaint(), WithServiceAccountDir(serviceAccount(t, "", ca))}, "reading the service account token"},
		{"empty token", "node-a", []Option{WithTaint(), WithServiceAccountDir(serviceAccount(t, "\n", ca))}, "is empty"},
		{"no CA", "node-a", []Option{WithLabel(), WithServiceAccountDir(serviceAccount(t, "tok", ""))}, "reading the API server's CA"},
		{"a CA that is no PEM", "node-a", []Option{WithLabel(), WithServiceAccountDir(serviceAccount(t, "tok", "junk"))}, "holds no PEM certificate"},
	}
	for _, c := range cases {
		if _, err := New(c.node, c.opts...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want %q", c.name, err, c.want)
		}
	}
	if _, err := New("node-a", WithLabel(), WithServiceAccountDir(good)); err != nil {
		t.Errorf("a pod's credentials: %v", err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if _, err := New("node-a", WithLabel(), WithServiceAccountDir(good)); err == nil || !strings.Contains(err.Error(), "not in a Kubernetes pod") {
		t.Errorf("outside a pod: err = %v", err)
	}
}

func nodeWith(labels, annotations map[string]string, taints ...map[string]any) nodeObject {
	var n nodeObject
	n.Metadata.ResourceVersion = "7"
	n.Metadata.Labels, n.Metadata.Annotations, n.Spec.Taints = labels, annotations, taints
	return n
}

// TestPatchLeavesExactlyTheMarksWanted: a mark a flag no longer asks for
// goes with the next run (turning --node-taint off leaves no taint), the
// others' taints are sent back as read with the version they were read
// at, and a node that carries what is wanted is not written at all.
func TestPatchLeavesExactlyTheMarksWanted(t *testing.T) {
	gpu := map[string]any{"key": "nvidia.com/gpu", "effect": "NoSchedule"}
	ours := map[string]any{"key": Taint, "effect": "NoSchedule"}
	marked := map[string]string{Label: "false"}
	failing := map[string]string{Annotation: "GH-A"}
	both := &marker{label: true, taint: true}
	cases := []struct {
		name    string
		m       *marker
		n       nodeObject
		failing []string
		want    string
	}{
		{"unmarked, failing", both, nodeWith(nil, nil, gpu), []string{"GH-A"},
			`{"metadata":{"annotations":{"gpuhost.dev/failing-checks":"GH-A"},"labels":{"gpuhost.dev/compliant":"false"},"resourceVersion":"7"},` +
				`"spec":{"taints":[{"effect":"NoSchedule","key":"nvidia.com/gpu"},{"effect":"NoSchedule","key":"gpuhost.dev/noncompliant"}]}}`},
		{"marked, still failing", both, nodeWith(marked, failing, ours, gpu), []string{"GH-A"}, `null`},
		{"marked, another check failing", both, nodeWith(marked, failing, ours), []string{"GH-B"},
			`{"metadata":{"annotations":{"gpuhost.dev/failing-checks":"GH-B"}}}`},
		{"marked, passing", both, nodeWith(marked, failing, gpu, ours), nil,
			`{"metadata":{"annotations":{"gpuhost.dev/failing-checks":null},"labels":{"gpuhost.dev/compliant":null},"resourceVersion":"7"},` +
				`"spec":{"taints":[{"effect":"NoSchedule","key":"nvidia.com/gpu"}]}}`},
		{"label only, a taint left", &marker{label: true}, nodeWith(marked, failing, ours), []string{"GH-A"},
			`{"metadata":{"resourceVersion":"7"},"spec":{"taints":[]}}`},
		{"taint only, failing", &marker{taint: true}, nodeWith(nil, nil), []string{"GH-A"},
			`{"metadata":{"resourceVersion":"7"},"spec":{"taints":[{"effect":"NoSchedule","key":"gpuhost.dev/noncompliant"}]}}`},
		{"our taint changed to NoExecute", both, nodeWith(marked, failing, map[string]any{"key": Taint, "effect": "NoExecute"}), []string{"GH-A"},
			`{"metadata":{"resourceVersion":"7"},"spec":{"taints":[{"effect":"NoSchedule","key":"gpuhost.dev/noncompliant"}]}}`},
		{"unmarked, passing", both, nodeWith(nil, nil, gpu), nil, `null`},
	}
	for _, c := range cases {
		got, err := json.Marshal(c.m.patch(c.n, c.failing))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, got, c.want)
		}
	}
}
