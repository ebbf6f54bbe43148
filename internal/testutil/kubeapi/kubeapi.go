// Package kubeapi starts a real etcd and kube-apiserver for a test (both
// built by make kube into bin/), with a PKI of its own made under the
// test's temporary directory, on 127.0.0.1 ports, and stops them by PID
// when the test ends. Nothing runs but the API server itself: objects a
// controller or kubelet would make, a test creates through the API.
package kubeapi

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// Server is a running API server.
type Server struct {
	// Host and Port are its address, as a pod finds them in
	// KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT.
	Host string
	Port int
	// CA is the PEM of the CA its serving certificate chains to, what a pod
	// finds in its service account's ca.crt.
	CA []byte
	// Signer is that CA, for a test that issues the client certificates of
	// further components (controllers, a kubelet): the API server trusts
	// what it signs.
	Signer *testutil.CA
	// Ready is how long it took from its start to answering /readyz.
	Ready time.Duration
	// Proc is the kube-apiserver process, with its output.
	Proc *testutil.Proc

	admin *http.Client
}

// Start starts etcd and kube-apiserver with RBAC, the default admission
// plugins and service account tokens signed by a key of the test's, and
// waits until the API server is ready. It skips the test (fails it under
// CI) when make kube has not built them.
func Start(t testing.TB) *Server {
	t.Helper()
	etcdBin := testutil.BuiltTool(t, "etcd", "kube")
	apiBin := testutil.BuiltTool(t, "kube-apiserver", "kube")
	dir := t.TempDir()
	ca := testutil.NewCA(t)
	caFile := filepath.Join(dir, "ca.crt")
	write(t, caFile, ca.PEM())
	serving := filepath.Join(dir, "serving")
	client := filepath.Join(dir, "admin")
	for _, d := range []string{serving, client} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	servingCert, servingKey, _ := testutil.WriteCert(t, serving, testutil.CertSpec{CA: ca, CommonName: "kube-apiserver", IPs: []net.IP{net.IPv4(127, 0, 0, 1)}, DNS: []string{"localhost"}})
	// system:masters is the group RBAC lets do everything: the test's admin.
	_, _, admin := testutil.WriteCert(t, client, testutil.CertSpec{CA: ca, CommonName: "gpuhost-test-admin", Organization: []string{"system:masters"}, Client: true})
	saKey := filepath.Join(dir, "service-accounts.key")
	write(t, saKey, signingKey(t))

	etcdURL := startEtcd(t, etcdBin, filepath.Join(dir, "etcd"))
	s := &Server{Host: "127.0.0.1", Port: testutil.FreePort(t), CA: ca.PEM(), Signer: ca}
	s.admin = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		RootCAs: ca.Pool(), Certificates: []tls.Certificate{admin}, MinVersion: tls.VersionTLS12,
	}}}
	t.Cleanup(s.admin.CloseIdleConnections)
	started := time.Now()
	s.Proc = testutil.Start(t, exec.Command(apiBin,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+strconv.Itoa(s.Port),
		"--tls-cert-file="+servingCert, "--tls-private-key-file="+servingKey, "--cert-dir="+filepath.Join(dir, "certs"),
		"--client-ca-file="+caFile,
		"--authorization-mode=RBAC",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+saKey, "--service-account-signing-key-file="+saKey,
		"--service-cluster-ip-range=10.96.0.0/24",
		"--profiling=false",
	))
	s.Proc.WaitFor(t, 3*time.Minute, "/readyz", func() bool {
		code, _, err := s.Send("", http.MethodGet, "/readyz", "", nil)
		return err == nil && code == http.StatusOK
	})
	s.Ready = time.Since(started)
	return s
}

// URL is the API server's address, as a kubeconfig names it.
func (s *Server) URL() string {
	return "https://" + net.JoinHostPort(s.Host, strconv.Itoa(s.Port))
}

func write(t testing.TB, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// signingKey is the key service account tokens are signed with and checked
// against, PEM-encoded.
func signingKey(t testing.TB) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	// SEC 1, not PKCS #8: the API server reads the public half from the
	// same file, and finds it only in an EC PRIVATE KEY block.
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

// startEtcd runs a one-member etcd on loopback ports and returns its client
// URL once it reports itself healthy.
func startEtcd(t testing.TB, bin, dataDir string) string {
	t.Helper()
	clientURL := fmt.Sprintf("http://127.0.0.1:%d", testutil.FreePort(t))
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", testutil.FreePort(t))
	p := testutil.Start(t, exec.Command(bin,
		"--name=test", "--data-dir="+dataDir,
		"--listen-client-urls="+clientURL, "--advertise-client-urls="+clientURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=test="+peerURL, "--log-level=warn",
	))
	hc := &http.Client{Timeout: 2 * time.Second}
	p.WaitFor(t, time.Minute, "etcd /health", func() bool {
		resp, err := hc.Get(clientURL + "/health")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK && strings.Contains(string(b), `"health":"true"`)
	})
	return clientURL
}

// Send sends one request, as the admin when token is empty and as the
// token's bearer otherwise, and returns the answer whatever it is. Unlike
// Admin and As it needs no test, for a handler's goroutine.
func (s *Server) Send(token, method, path, contentType string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, fmt.Sprintf("https://%s%s", net.JoinHostPort(s.Host, strconv.Itoa(s.Port)), path), bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Accept", "application/json")
	hc := s.admin
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
		hc = &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
			RootCAs: s.admin.Transport.(*http.Transport).TLSClientConfig.RootCAs, MinVersion: tls.VersionTLS12,
		}}}
		defer hc.CloseIdleConnections()
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// Admin sends body (JSON-encoded unless it is already bytes) as the admin
// and returns the answer; anything but a 2xx fails the test.
func (s *Server) Admin(t testing.TB, method, path string, body any) []byte {
	t.Helper()
	raw, ok := body.([]byte)
	if !ok && body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			t.Fatal(err)
		}
	}
	contentType := "application/json"
	if method == http.MethodPatch {
		contentType = "application/strategic-merge-patch+json"
	}
	code, answer, err := s.Send("", method, path, contentType, raw)
	if err != nil || code/100 != 2 {
		t.Fatalf("%s %s: %d %v\n%s", method, path, code, err, answer)
	}
	return answer
}

// As sends a request with token as its bearer and returns the status code
// and answer, whatever they are.
func (s *Server) As(t testing.TB, token, method, path, contentType string, body []byte) (int, []byte) {
	t.Helper()
	code, answer, err := s.Send(token, method, path, contentType, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	return code, answer
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// Apply applies every document of a YAML manifest as kubectl apply
// --server-side does, with strict field validation: a field the API does
// not know, or one given twice, fails the test.
func (s *Server) Apply(t testing.TB, manifest []byte) {
	t.Helper()
	for _, doc := range docSeparator.Split(string(manifest), -1) {
		var head struct {
			APIVersion string `yaml:"apiVersion"`
			Kind       string `yaml:"kind"`
			Metadata   struct{ Name, Namespace string }
		}
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			t.Fatalf("manifest document: %v\n%s", err, doc)
		}
		if head.Kind == "" {
			continue
		}
		path := ResourcePath(head.APIVersion, head.Kind, head.Metadata.Namespace) + "/" + head.Metadata.Name +
			"?fieldManager=gpuhost-test&fieldValidation=Strict&force=true"
		code, answer, err := s.Send("", http.MethodPatch, path, "application/apply-patch+yaml", []byte(doc))
		if err != nil || code/100 != 2 {
			t.Fatalf("applying %s %s: %d %v\n%s", head.Kind, head.Metadata.Name, code, err, answer)
		}
	}
}

// ResourcePath is the API path of the collection of kind in apiVersion,
// within namespace when it is not empty.
func ResourcePath(apiVersion, kind, namespace string) string {
	p := "/apis/" + apiVersion
	if !strings.Contains(apiVersion, "/") {
		p = "/api/" + apiVersion
	}
	if namespace != "" {
		p += "/namespaces/" + namespace
	}
	plural := strings.ToLower(kind)
	switch {
	case strings.HasSuffix(plural, "y") && !strings.ContainsAny(plural[len(plural)-2:len(plural)-1], "aeiou"):
		plural = strings.TrimSuffix(plural, "y") + "ies"
	case strings.HasSuffix(plural, "s"):
		plural += "es"
	default:
		plural += "s"
	}
	return p + "/" + plural
}

// DaemonSetPod makes the pod the DaemonSet's controller would place on
// node, from the DaemonSet as the API server holds it (no controller runs),
// and returns it as the API server stored it, admission's changes and all.
// Each edit changes the pod's spec first, as a test that stands in for a
// piece of the node needs (the port its agent really listens on).
func (s *Server) DaemonSetPod(t testing.TB, namespace, daemonSet, node string, edits ...func(spec map[string]any)) Object {
	t.Helper()
	var ds struct {
		Spec struct {
			Template struct {
				Metadata struct {
					Labels map[string]string `json:"labels"`
				} `json:"metadata"`
				Spec map[string]any `json:"spec"`
			} `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(s.Admin(t, http.MethodGet, ResourcePath("apps/v1", "DaemonSet", namespace)+"/"+daemonSet, nil), &ds); err != nil {
		t.Fatal(err)
	}
	spec := ds.Spec.Template.Spec
	spec["nodeName"] = node
	for _, edit := range edits {
		edit(spec)
	}
	pod := map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": daemonSet + "-" + node, "namespace": namespace, "labels": ds.Spec.Template.Metadata.Labels},
		"spec":     spec,
	}
	var made Object
	if err := json.Unmarshal(s.Admin(t, http.MethodPost, ResourcePath("v1", "Pod", namespace), pod), &made); err != nil {
		t.Fatal(err)
	}
	return made
}

// Object is what tests read of any object: its name and UID, and the rest
// as decoded JSON.
type Object struct {
	Metadata struct {
		Name string `json:"name"`
		UID  string `json:"uid"`
	} `json:"metadata"`
	Spec map[string]any `json:"spec"`
}

// Token asks the TokenRequest API for a token of the service account, as
// the kubelet does for a pod's projected token volume: bound to pod when it
// is not nil, which puts the pod's node in the token too.
func (s *Server) Token(t testing.TB, namespace, account string, pod *Object) string {
	t.Helper()
	spec := map[string]any{"expirationSeconds": 3607}
	if pod != nil {
		spec["boundObjectRef"] = map[string]any{"apiVersion": "v1", "kind": "Pod", "name": pod.Metadata.Name, "uid": pod.Metadata.UID}
	}
	var tr struct {
		Status struct {
			Token string `json:"token"`
		} `json:"status"`
	}
	body := s.Admin(t, http.MethodPost, ResourcePath("v1", "ServiceAccount", namespace)+"/"+account+"/token",
		map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": spec})
	if err := json.Unmarshal(body, &tr); err != nil || tr.Status.Token == "" {
		t.Fatalf("TokenRequest: %v\n%s", err, body)
	}
	return tr.Status.Token
}

// WhoAmI is the user the API server takes token for (SelfSubjectReview),
// with the extra attributes admission policies see.
func (s *Server) WhoAmI(t testing.TB, token string) (user string, extra map[string][]string) {
	t.Helper()
	code, body := s.As(t, token, http.MethodPost, "/apis/authentication.k8s.io/v1/selfsubjectreviews", "application/json",
		[]byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`))
	var r struct {
		Status struct {
			UserInfo struct {
				Username string              `json:"username"`
				Extra    map[string][]string `json:"extra"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	if err := json.Unmarshal(body, &r); code != http.StatusCreated || err != nil {
		t.Fatalf("SelfSubjectReview: %d %v\n%s", code, err, body)
	}
	return r.Status.UserInfo.Username, r.Status.UserInfo.Extra
}

// ServiceAccountDir writes token and the CA where a pod finds them
// (/var/run/secrets/kubernetes.io/serviceaccount), into a new directory.
func (s *Server) ServiceAccountDir(t testing.TB, token, namespace string) string {
	t.Helper()
	dir := t.TempDir()
	write(t, filepath.Join(dir, "token"), []byte(token))
	write(t, filepath.Join(dir, "ca.crt"), s.CA)
	write(t, filepath.Join(dir, "namespace"), []byte(namespace))
	return dir
}
