// Package kubelet serves the kubelet's real pod-resources gRPC service
// (k8s.io/kubelet/pkg/apis/podresources/v1) on a unix socket for tests, so
// that a client is tested against the protocol a node speaks.
package kubelet

import (
	"context"
	"maps"
	"net"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"google.golang.org/grpc"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// PodResources is a pod-resources server whose answer a test can change
// between calls.
type PodResources struct {
	podresourcesv1.UnimplementedPodResourcesListerServer

	// Socket is the unix socket it listens on.
	Socket string

	mu    sync.Mutex
	pods  []*podresourcesv1.PodResources
	calls int
}

// ServePodResources listens on a socket in a temporary directory and stops
// when the test ends.
func ServePodResources(t testing.TB, pods ...*podresourcesv1.PodResources) *PodResources {
	t.Helper()
	s := &PodResources{Socket: filepath.Join(t.TempDir(), "kubelet.sock"), pods: pods}
	ln, err := net.Listen("unix", s.Socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	podresourcesv1.RegisterPodResourcesListerServer(srv, s)
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(srv.Stop)
	return s
}

// SetPods replaces the pods the next List answers with.
func (s *PodResources) SetPods(pods ...*podresourcesv1.PodResources) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods = pods
}

// Calls is how many List calls were answered.
func (s *PodResources) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// List answers with the pods set last.
func (s *PodResources) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	return &podresourcesv1.ListPodResourcesResponse{PodResources: s.pods}, nil
}

// Pod is a pod whose containers hold devices: containers maps a container's
// name to its devices, each a resource name and its device IDs.
func Pod(namespace, name string, containers map[string][]*podresourcesv1.ContainerDevices) *podresourcesv1.PodResources {
	p := &podresourcesv1.PodResources{Namespace: namespace, Name: name}
	for _, c := range slices.Sorted(maps.Keys(containers)) {
		p.Containers = append(p.Containers, &podresourcesv1.ContainerResources{Name: c, Devices: containers[c]})
	}
	return p
}

// Devices is one resource's device IDs in a container.
func Devices(resource string, ids ...string) *podresourcesv1.ContainerDevices {
	return &podresourcesv1.ContainerDevices{ResourceName: resource, DeviceIds: ids}
}
