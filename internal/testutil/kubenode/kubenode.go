// Package kubenode runs a real single-node Kubernetes for a test: the API
// server and etcd of kubeapi, kube-controller-manager, kube-scheduler, and
// a kubelet over Debian's containerd and runc, all built or installed by
// make kube and APT_TEST. The test runs in network, mount and PID
// namespaces of its own (Isolate), so the node's ports, mounts and
// processes cannot reach the machine, and everything the node made is
// stopped, unmounted and removed when the test ends.
package kubenode

import (
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/internal/testutil/kubeapi"
)

// IP is the node's address inside the test's network namespace. The
// kubelet refuses a loopback node address, so it is a private one, put on
// the namespace's loopback interface: nothing outside can route to it.
const IP = "10.200.0.1"

// nsEnv marks the test binary started again inside the namespaces, with
// the name of the test it runs there.
const nsEnv = "GPUHOST_KUBENODE_NS"

// Isolate runs the calling test again in new network, mount and PID
// namespaces and reports its result, and returns false: the caller
// returns at once. Inside them it brings the loopback interface up with
// IP on it and returns true. When the namespace's first process (the test)
// exits, the kernel ends every process the node started.
func Isolate(t *testing.T) bool {
	t.Helper()
	if os.Getenv(nsEnv) == t.Name() {
		for _, args := range [][]string{{"link", "set", "lo", "up"}, {"addr", "add", IP + "/32", "dev", "lo"}} {
			if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
				t.Fatalf("ip %v: %v\n%s", args, err, out)
			}
		}
		shadowFixedPaths(t)
		return true
	}
	testutil.Root(t)
	unshare := testutil.Tool(t, "unshare", "util-linux")
	testutil.Tool(t, "ip", "iproute2")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	deadline, ok := t.Deadline()
	timeout := 20 * time.Minute
	if ok {
		timeout = time.Until(deadline) - 30*time.Second
	}
	cmd := exec.Command(unshare, "--net", "--mount", "--pid", "--fork", "--mount-proc", "--", self,
		"-test.run=^"+regexp.QuoteMeta(t.Name())+"$", "-test.v", "-test.count=1", "-test.timeout="+timeout.String())
	cmd.Env = append(os.Environ(), nsEnv+"="+t.Name())
	out, err := cmd.CombinedOutput()
	t.Logf("in its own namespaces:\n%s", out)
	if err != nil {
		t.Fatalf("the test in its own namespaces: %v", err)
	}
	return false
}

// Options describe the node.
type Options struct {
	// Name is the node's name.
	Name string
	// Labels are the node's labels, as the kubelet registers them.
	Labels map[string]string
	// Registry is a plain-HTTP registry (host:port) containerd pulls from.
	Registry string
	// Pause is the sandbox image, by digest in Registry.
	Pause string
	// Handlers are runtime handlers besides runc; each runs runc too, as
	// stand-ins for runtimes this machine lacks (nvidia).
	Handlers []string
	// Containerd and Shim are the containerd and its runc shim
	// (containerd-shim-runc-v2) the node runs; empty, Debian's.
	Containerd, Shim string
}

// Node is a running single-node cluster.
type Node struct {
	// API is the cluster's API server.
	API *kubeapi.Server
	// Kubelet and Containerd are the node's daemons, with their output.
	Kubelet, Containerd *testutil.Proc
	// Started is when Start began; Ready is how long until the node was
	// Ready.
	Started time.Time
	Ready   time.Duration
	// KubeletDir is the kubelet's --root-dir, which holds its
	// pod-resources socket (pod-resources/kubelet.sock).
	KubeletDir string
	name       string
	logDir     string
}

// ContainerLog is what the container of the pod in namespace has written
// so far, read from the kubelet's pod log directory (CRI log format: each
// line after a timestamp and stream).
func (n *Node) ContainerLog(t *testing.T, namespace, pod, container string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(n.logDir, namespace+"_"+pod+"_*", container, "*.log"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no log of %s/%s %s under %s (%v)", namespace, pod, container, n.logDir, err)
	}
	var b strings.Builder
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
	}
	return b.String()
}

// Start starts the control plane and the node and waits until the node is
// Ready. It must run inside Isolate.
func Start(t *testing.T, o Options) *Node {
	t.Helper()
	if os.Getenv(nsEnv) != t.Name() {
		t.Fatal("kubenode.Start runs only inside kubenode.Isolate")
	}
	started := time.Now()
	cmBin := testutil.BuiltTool(t, "kube-controller-manager", "kube")
	schedBin := testutil.BuiltTool(t, "kube-scheduler", "kube")
	kubeletBin := testutil.BuiltTool(t, "kubelet", "kube")
	api := kubeapi.Start(t)
	dir := t.TempDir()
	n := &Node{API: api, Started: started, name: o.Name}
	caFile := filepath.Join(dir, "ca.crt")
	writeFile(t, caFile, api.CA)
	// system:masters for every component: the API server here authorizes
	// with RBAC alone (no Node authorizer), and the test is about the
	// node's runtime, not the components' least privilege.
	cm := kubeconfig(t, api, dir, "kube-controller-manager", "system:kube-controller-manager")
	testutil.Start(t, exec.Command(cmBin, "--kubeconfig="+cm, "--leader-elect=false",
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(testutil.FreePort(t)),
		"--root-ca-file="+caFile, "--use-service-account-credentials=false"))
	sched := kubeconfig(t, api, dir, "kube-scheduler", "system:kube-scheduler")
	testutil.Start(t, exec.Command(schedBin, "--kubeconfig="+sched, "--leader-elect=false",
		"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(testutil.FreePort(t))))

	cgroupRoot := makeCgroupRoot(t, "gpuhost-"+o.Name+"-"+rand.Text()[:8])
	n.Containerd = startContainerd(t, filepath.Join(dir, "containerd"), o)
	socket := filepath.Join(dir, "containerd", "containerd.sock")
	t.Cleanup(func() { unmountUnder(t, dir) })
	t.Cleanup(func() { stopContainers(t, cgroupRoot, filepath.Join(dir, "containerd")) })
	kc := kubeconfig(t, api, dir, "kubelet", "system:node:"+o.Name)
	n.KubeletDir = filepath.Join(dir, "kubelet")
	n.logDir = filepath.Join(n.KubeletDir, "pod-logs")
	n.Kubelet = startKubelet(t, kubeletBin, n.KubeletDir, kc, socket, cgroupRoot, o)
	n.Kubelet.WaitFor(t, 3*time.Minute, "node "+o.Name+" Ready", func() bool { return n.isReady() })
	n.Ready = time.Since(started)
	return n
}

func (n *Node) isReady() bool {
	code, body, err := n.API.Send("", http.MethodGet, "/api/v1/nodes/"+n.name, "", nil)
	if err != nil || code != http.StatusOK {
		return false
	}
	var node struct {
		Status struct {
			Conditions []struct{ Type, Status string } `json:"conditions"`
		} `json:"status"`
	}
	if json.Unmarshal(body, &node) != nil {
		return false
	}
	for _, c := range node.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

// kubeconfig writes a kubeconfig for user, with a client certificate the
// cluster's CA signs, and returns its path.
func kubeconfig(t *testing.T, api *kubeapi.Server, dir, name, user string) string {
	t.Helper()
	certDir := filepath.Join(dir, name+"-pki")
	if err := os.Mkdir(certDir, 0o700); err != nil {
		t.Fatal(err)
	}
	cert, key, _ := testutil.WriteCert(t, certDir, testutil.CertSpec{CA: api.Signer, CommonName: user, Organization: []string{"system:masters"}, Client: true})
	caFile := filepath.Join(certDir, "ca.crt")
	writeFile(t, caFile, api.CA)
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: test
  cluster: {server: %q, certificate-authority: %q}
users:
- name: %s
  user: {client-certificate: %q, client-key: %q}
contexts:
- name: test
  context: {cluster: test, user: %s}
current-context: test
`, api.URL(), caFile, name, cert, key, name)
	p := filepath.Join(dir, name+".kubeconfig")
	writeFile(t, p, []byte(cfg))
	return p
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}
