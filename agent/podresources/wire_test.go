package podresources

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"google.golang.org/protobuf/proto"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpuhost/gpuhost/internal/testutil/kubelet"
)

// allocationsOf is what parseList must find, read through the generated
// types: the NVIDIA devices of each container.
func allocationsOf(resp *podresourcesv1.ListPodResourcesResponse) []Allocation {
	var out []Allocation
	for _, p := range resp.GetPodResources() {
		for _, c := range p.GetContainers() {
			for _, d := range c.GetDevices() {
				a := Allocation{Namespace: p.GetNamespace(), Pod: p.GetName(), Container: c.GetName(), Resource: d.GetResourceName(), DeviceIDs: d.GetDeviceIds()}
				if a.Resource == GPUResource || len(a.Resource) > len(MIGResourcePrefix) && a.Resource[:len(MIGResourcePrefix)] == MIGResourcePrefix {
					out = append(out, a)
				}
			}
		}
	}
	return out
}

// FuzzParseList holds the wire reader to protobuf's own decoding of the
// same bytes: where proto.Unmarshal reads an answer, parseList finds the
// same NVIDIA allocations.
func FuzzParseList(f *testing.F) {
	seed, err := proto.Marshal(&podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{
		kubelet.Pod("ml", "trainer-0", map[string][]*podresourcesv1.ContainerDevices{
			"train": {kubelet.Devices("nvidia.com/gpu", "GPU-aaa", "GPU-bbb"), kubelet.Devices("example.com/nic", "eth9")},
		}),
		kubelet.Pod("inference", "llm", map[string][]*podresourcesv1.ContainerDevices{"serve": {kubelet.Devices("nvidia.com/mig-1g.10gb", "MIG-c")}}),
	}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte{0x0a, 0x80})
	f.Fuzz(func(t *testing.T, b []byte) {
		got, _, err := parseList(b, 1<<30)
		var resp podresourcesv1.ListPodResourcesResponse
		if proto.Unmarshal(b, &resp) != nil {
			return
		}
		if err != nil {
			t.Fatalf("proto reads the answer, parseList does not: %v", err)
		}
		if want := allocationsOf(&resp); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("parseList\n got %v\nwant %v", got, want)
		}
	})
}

// An answer of empty entries costs what its NVIDIA allocations need:
// decoded into objects, as List did through the generated types, a 1 MiB
// answer of half a million empty containers took 101 MiB, and 8 MiB took
// 804 MiB. Read from the wire, 8 MiB allocate almost nothing, and List of
// the 1 MiB one end to end, gRPC's buffers and the server in this process
// included, stays well under what decoding alone took.
func TestListMemoryFollowsTheAllocations(t *testing.T) {
	wide := &podresourcesv1.PodResources{Name: "wide"}
	for range 1 << 22 {
		wide.Containers = append(wide.Containers, &podresourcesv1.ContainerResources{})
	}
	b, err := proto.Marshal(&podresourcesv1.ListPodResourcesResponse{PodResources: []*podresourcesv1.PodResources{wide}})
	if err != nil {
		t.Fatal(err)
	}
	wide = nil
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	if _, _, err := parseList(b, 5000); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&m1)
	if grew := m1.TotalAlloc - m0.TotalAlloc; grew > 1<<20 {
		t.Errorf("parseList allocated %d KiB for a %d MiB answer of empty containers", grew>>10, len(b)>>20)
	}

	containers := make([]*podresourcesv1.ContainerResources, 0, 1<<19)
	for range 1 << 19 {
		containers = append(containers, &podresourcesv1.ContainerResources{})
	}
	pod := kubelet.Pod("ns", "wide", map[string][]*podresourcesv1.ContainerDevices{"c": {kubelet.Devices("nvidia.com/gpu", "GPU-1")}})
	pod.Containers = append(pod.Containers, containers...)
	k := kubelet.ServePodResources(t, pod)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got, err := New(k.Socket, WithMaxMessageSize(16<<20)).List(context.Background())
	runtime.ReadMemStats(&after)
	if err != nil || len(got) != 1 || got[0].DeviceIDs[0] != "GPU-1" {
		t.Fatalf("List = %v, %v", got, err)
	}
	// The server's side of the test allocates in this process too.
	if grew := after.TotalAlloc - before.TotalAlloc; grew > 48<<20 {
		t.Errorf("List allocated %d MiB for a 1 MiB answer", grew>>20)
	}
}
