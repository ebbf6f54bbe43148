package deploy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/gpuhost/gpuhost/internal/testutil/gpumock"
	"github.com/gpuhost/gpuhost/internal/testutil/kubeapi"
	"github.com/gpuhost/gpuhost/internal/testutil/kubenode"
)

// gpuResource is the resource the NVIDIA device plugin registers.
const gpuResource = "nvidia.com/gpu"

// gpuHolderOnTheNode registers a stand-in for NVIDIA's device plugin with
// the node's kubelet, offering gpumock's GPUs by UUID, and runs a workload
// pod asking for one GPU. The agent reads the kubelet's pod-resources
// socket each GPU sample: the GPU the kubelet gave the workload must carry
// its namespace, pod and container in /metrics and in Prometheus, and no
// other GPU may.
func gpuHolderOnTheNode(t *testing.T, kn *kubenode.Node, prom *promServer, image string) {
	t.Helper()
	plugin := startDevicePlugin(t)
	registered := time.Now()
	kn.Kubelet.WaitFor(t, time.Minute, realNode+" allocatable "+gpuResource, func() bool {
		var n struct {
			Status struct {
				Allocatable map[string]string `json:"allocatable"`
			} `json:"status"`
		}
		getJSON(t, kn.API, "/api/v1/nodes/"+realNode, &n)
		return n.Status.Allocatable[gpuResource] == fmt.Sprint(gpumock.Count)
	})
	t.Logf("%d %s allocatable on %s %s after the device plugin registered", gpumock.Count, gpuResource, realNode, time.Since(registered).Round(time.Millisecond))

	api := kn.API
	api.Admin(t, http.MethodPost, "/api/v1/namespaces", map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ml"}})
	// hostNetwork: the node has no CNI plugin to give a pod a network.
	api.Admin(t, http.MethodPost, kubeapi.ResourcePath("v1", "Pod", "ml"), map[string]any{
		"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "trainer"},
		"spec": map[string]any{"hostNetwork": true, "terminationGracePeriodSeconds": 0, "containers": []any{map[string]any{
			"name": "cuda", "image": image, "resources": map[string]any{"limits": map[string]any{gpuResource: "1"}},
		}}},
	})
	created := time.Now()
	kn.Kubelet.WaitFor(t, 2*time.Minute, "the workload's pod running", func() bool {
		var p agentPod
		getJSON(t, api, kubeapi.ResourcePath("v1", "Pod", "ml")+"/trainer", &p)
		return p.Status.Phase == "Running"
	})
	given := plugin.allocated()
	t.Logf("ml/trainer running %s after it was made, given %v", time.Since(created).Round(time.Millisecond), given)
	if len(given) != 1 {
		t.Fatalf("the kubelet allocated %v to the workload, want one GPU", given)
	}

	holders := agentGPUHolders(t, api, 30*time.Second, func(h map[string]string) bool { return h[given[0]] != "" })
	for uuid, h := range holders {
		if uuid == given[0] && h != "ml/trainer/cuda" || uuid != given[0] && h != "" {
			t.Errorf("GPU %s is labelled %q in /metrics; only %s should be, as ml/trainer/cuda", uuid, h, given[0])
		}
	}
	if len(holders) != gpumock.Count {
		t.Errorf("/metrics has %d GPUs, want %d: %v", len(holders), gpumock.Count, holders)
	}
	prom.waitFor(t, 30*time.Second, fmt.Sprintf(`DCGM_FI_DEV_GPU_TEMP{UUID=%q, namespace="ml", pod="trainer", container="cuda", node=%q}`, given[0], realNode))
	prom.waitFor(t, 10*time.Second, `count(DCGM_FI_DEV_GPU_TEMP{pod="trainer"}) == 1`)
	t.Logf("GPU %s attributed to ml/trainer/cuda in /metrics and Prometheus %s after the pod was made", given[0], time.Since(created).Round(time.Millisecond))
}

// devicePlugin stands in for NVIDIA's device plugin: it offers gpumock's
// GPUs, healthy, by UUID, and records what the kubelet allocates.
type devicePlugin struct {
	pluginapi.UnimplementedDevicePluginServer
	mu    sync.Mutex
	given []string
}

func (p *devicePlugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

// ListAndWatch sends the GPUs once and holds the stream open: they never
// change.
func (p *devicePlugin) ListAndWatch(_ *pluginapi.Empty, s grpc.ServerStreamingServer[pluginapi.ListAndWatchResponse]) error {
	var devs []*pluginapi.Device
	for i := range gpumock.Count {
		devs = append(devs, &pluginapi.Device{ID: gpumock.UUID(i), Health: pluginapi.Healthy})
	}
	if err := s.Send(&pluginapi.ListAndWatchResponse{Devices: devs}); err != nil {
		return err
	}
	<-s.Context().Done()
	return nil
}

// Allocate gives each container the GPUs asked for as NVIDIA's plugin
// does with its envvar strategy.
func (p *devicePlugin) Allocate(_ context.Context, r *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range r.ContainerRequests {
		p.given = append(p.given, c.DevicesIds...)
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{"NVIDIA_VISIBLE_DEVICES": strings.Join(c.DevicesIds, ",")},
		})
	}
	return resp, nil
}

func (p *devicePlugin) allocated() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.given)
}

// startDevicePlugin serves the plugin on a socket in the kubelet's
// device-plugin directory and registers it with the kubelet there.
func startDevicePlugin(t *testing.T) *devicePlugin {
	t.Helper()
	const endpoint = "gpuhost-test.sock"
	sock := filepath.Join(pluginapi.DevicePluginPath, endpoint)
	l, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	p := &devicePlugin{}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, p)
	go func() { _ = srv.Serve(l) }()
	t.Cleanup(func() {
		srv.Stop()
		_ = os.Remove(sock)
	})
	conn, err := grpc.NewClient("unix://"+pluginapi.KubeletSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: endpoint, ResourceName: gpuResource,
	}); err != nil {
		t.Fatalf("registering the device plugin with the kubelet: %v", err)
	}
	return p
}

var gpuTempLine = regexp.MustCompile(`^DCGM_FI_DEV_GPU_TEMP\{.*UUID="([^"]*)".*\}`)

// agentGPUHolders scrapes the agent's /metrics on the node, as Prometheus
// does (TLS to the Service's name, the bearer token), until done says the
// holders read are what it waits for: each GPU's UUID with the
// namespace/pod/container its series carry ("" for none).
func agentGPUHolders(t *testing.T, api *kubeapi.Server, timeout time.Duration, done func(map[string]string) bool) map[string]string {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(decodeSecret(t, api, "gpuhost-agent-tls", "ca.crt"))
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: serverName, MinVersion: tls.VersionTLS13}}}
	token := string(decodeSecret(t, api, "gpuhost-agent-token", "token"))
	label := func(line, name string) string {
		m := regexp.MustCompile(`[{,]` + name + `="([^"]*)"`).FindStringSubmatch(line)
		if m == nil {
			return ""
		}
		return m[1]
	}
	var holders map[string]string
	var lastErr error
	deadline := time.Now().Add(timeout)
	for {
		req, _ := http.NewRequest(http.MethodGet, "https://"+net.JoinHostPort(kubenode.IP, "9108")+"/metrics", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			holders = map[string]string{}
			for line := range strings.Lines(string(body)) {
				if m := gpuTempLine.FindStringSubmatch(line); m != nil {
					h := strings.Join([]string{label(line, "namespace"), label(line, "pod"), label(line, "container")}, "/")
					holders[m[1]] = strings.Trim(h, "/")
				}
			}
			if done(holders) {
				return holders
			}
		}
		lastErr = err
		if time.Now().After(deadline) {
			t.Fatalf("the agent's /metrics after %s: %v; GPU holders %v", timeout, lastErr, holders)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
