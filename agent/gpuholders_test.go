package agent

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"
	dto "github.com/prometheus/client_model/go"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpuhost/gpuhost/agent/podresources"
	"github.com/gpuhost/gpuhost/internal/testutil/kubelet"
)

// seriesLabels are a metric's series by GPU index, each as its labels.
func seriesLabels(fams map[string]*dto.MetricFamily, name string) map[string]map[string]string {
	out := map[string]map[string]string{}
	if fams[name] == nil {
		return out
	}
	for _, m := range fams[name].Metric {
		l := map[string]string{}
		for _, p := range m.Label {
			l[p.GetName()] = p.GetValue()
		}
		out[l["gpu"]] = l
	}
	return out
}

func uuidOf(t *testing.T, g *fleetGPUs, i int) string {
	t.Helper()
	return g.Devices[i].(*server.Device).UUID
}

// The kubelet, through its real gRPC service on a unix socket, has given
// GPUs 0 and 1 to a trainer by UUID, a shared replica of GPU 2 (UUID::N) and
// a MIG slice of GPU 5 to an inference pod, and a NIC to nobody the agent
// cares about. The agent's /metrics names each holder on each of the GPU's
// series, and the other GPUs carry empty workload labels.
func TestGPUSeriesNameTheContainerHoldingTheGPU(t *testing.T) {
	g := newFleetGPUs()
	mig := "MIG-0f3c7a56-1c1d-5a3e-9d3e-3c3c3c3c3c3c"
	byUUID := g.DeviceGetHandleByUUIDFunc
	g.DeviceGetHandleByUUIDFunc = func(uuid string) (nvml.Device, nvml.Return) {
		if uuid == mig {
			return &mock.Device{GetDeviceHandleFromMigDeviceHandleFunc: func() (nvml.Device, nvml.Return) {
				return g.Devices[5], nvml.SUCCESS
			}}, nvml.SUCCESS
		}
		return byUUID(uuid)
	}
	k := kubelet.ServePodResources(t,
		kubelet.Pod("ml", "trainer-0", map[string][]*podresourcesv1.ContainerDevices{
			"train": {kubelet.Devices("nvidia.com/gpu", uuidOf(t, g, 0), uuidOf(t, g, 1))},
		}),
		kubelet.Pod("inference", "llm-7f9c", map[string][]*podresourcesv1.ContainerDevices{
			"serve":   {kubelet.Devices("nvidia.com/gpu", uuidOf(t, g, 2)+"::3"), kubelet.Devices("nvidia.com/mig-1g.10gb", mig)},
			"metrics": {kubelet.Devices("example.com/nic", "0000:3b:00.0")},
		}),
	)
	s := NewGPUSampler(g, hostProc(t), quietLog(), WithPodResources(podresources.New(k.Socket)))
	a := newAgent(t, Config{GPU: s})
	if err := s.Sample(context.Background()); err != nil {
		t.Fatal(err)
	}
	fams := scrape(t, a.Handler(), "")
	want := map[string]string{
		"0": "ml/trainer-0/train", "1": "ml/trainer-0/train",
		"2": "inference/llm-7f9c/serve", "5": "inference/llm-7f9c/serve",
		"3": "//", "4": "//", "6": "//", "7": "//",
	}
	for _, name := range []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "gpuhost_gpu_processes"} {
		got := seriesLabels(fams, name)
		if len(got) != 8 {
			t.Errorf("%s: %d series", name, len(got))
		}
		for gpu, w := range want {
			l := got[gpu]
			if h := l["namespace"] + "/" + l["pod"] + "/" + l["container"]; h != w {
				t.Errorf("%s on GPU %s held by %q, want %q", name, gpu, h, w)
			}
		}
	}
	if k.Calls() != 1 {
		t.Errorf("%d List calls for one sample", k.Calls())
	}

	// The trainer ends and another pod takes GPU 0 by its index.
	k.SetPods(kubelet.Pod("ml", "eval-1", map[string][]*podresourcesv1.ContainerDevices{
		"eval": {kubelet.Devices("nvidia.com/gpu", "0")},
	}))
	if err := s.Sample(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := seriesLabels(scrape(t, a.Handler(), ""), "DCGM_FI_DEV_GPU_UTIL")
	if got["0"]["pod"] != "eval-1" || got["1"]["pod"] != "" || len(got) != 8 {
		t.Errorf("after the trainer ended: GPU 0 held by %q, GPU 1 by %q", got["0"]["pod"], got["1"]["pod"])
	}
}

// Off Kubernetes there is no socket: no attribution, said once in the log,
// and no sample error; a socket that does not answer is a sample error.
func TestGPUAttributionWithoutAKubelet(t *testing.T) {
	var log bytes.Buffer
	sock := filepath.Join(t.TempDir(), "kubelet.sock")
	s := NewGPUSampler(newFleetGPUs(), hostProc(t), slog.New(slog.NewTextHandler(&log, nil)), WithPodResources(podresources.New(sock)))
	for range 3 {
		if err := s.Sample(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	m := gather(t, s)
	if n := strings.Count(log.String(), "no workload labels"); n != 1 {
		t.Errorf("said %d times:\n%s", n, log.String())
	}
	if errs := m["gpuhost_gpu_sample_errors_total"]; len(errs) != 0 {
		t.Errorf("sample errors without a kubelet: %v", errs)
	}
	for _, l := range m["DCGM_FI_DEV_GPU_UTIL"][0].Label {
		if (l.GetName() == "pod" || l.GetName() == "namespace") && l.GetValue() != "" {
			t.Errorf("label %s=%q", l.GetName(), l.GetValue())
		}
	}

	// A kubelet that died and left its socket behind.
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	if err := s.Sample(context.Background()); err != nil {
		t.Fatal(err)
	}
	m = gather(t, s)
	errs := m["gpuhost_gpu_sample_errors_total"]
	if len(errs) != 1 || errs[0].Label[0].GetValue() != "PodResourcesList" || errs[0].Counter.GetValue() != 1 {
		t.Errorf("sample errors with a dead kubelet: %v", errs)
	}
	if len(m["DCGM_FI_DEV_GPU_UTIL"]) != 8 {
		t.Errorf("%d GPUs sampled with a dead kubelet", len(m["DCGM_FI_DEV_GPU_UTIL"]))
	}
}
