// Package podresources asks the kubelet which containers hold which NVIDIA
// devices, through its pod-resources gRPC API on a unix socket, the way
// dcgm-exporter attributes GPU metrics to workloads.
package podresources

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"
)

// DefaultSocket is where the kubelet serves the pod-resources API, relative
// to the node's root.
const DefaultSocket = "/var/lib/kubelet/pod-resources/kubelet.sock"

// GPUResource is the resource name NVIDIA's device plugin gives whole GPUs;
// MIGResourcePrefix starts the names of MIG slices (nvidia.com/mig-1g.5gb).
// dcgm-exporter matches the same two (internal/pkg/appconfig/const.go).
const (
	GPUResource       = "nvidia.com/gpu"
	MIGResourcePrefix = "nvidia.com/mig-"
)

// ErrNoSocket means the kubelet's socket is not there: the host is not a
// Kubernetes node, or not one whose kubelet serves pod resources.
var ErrNoSocket = errors.New("no kubelet pod-resources socket")

// Allocation is one container's share of NVIDIA devices, with the device
// IDs the device plugin handed out: GPU UUIDs, MIG UUIDs, indexes, or those
// with a ::N sharing suffix.
type Allocation struct {
	Namespace, Pod, Container string
	Resource                  string
	DeviceIDs                 []string
}

// Lister lists the NVIDIA devices the kubelet has allocated to containers.
// An answer with more pods than the Lister reads gives the first pods'
// allocations together with an error.
type Lister interface {
	List(ctx context.Context) ([]Allocation, error)
}

// Option sets a bound of the Lister New returns.
type Option func(*lister)

// WithTimeout bounds one List call, connection included (2s by default).
func WithTimeout(d time.Duration) Option { return func(l *lister) { l.timeout = d } }

// WithMaxMessageSize bounds the kubelet's answer in bytes (16 MiB by
// default, what the kubelet's own node tests allow its clients).
func WithMaxMessageSize(n int) Option { return func(l *lister) { l.maxMsg = n } }

// WithMaxPods bounds the pods read from one answer (5000 by default, well
// past the kubelet's largest --max-pods in practice); the rest are dropped
// and the answer is an error.
func WithMaxPods(n int) Option { return func(l *lister) { l.maxPods = n } }

// New returns a Lister asking the kubelet at socket. A connection is made
// per call: the kubelet restarts and recreates its socket, and an agent
// sampling every few seconds gains nothing from keeping one open.
func New(socket string, opts ...Option) Lister {
	l := &lister{socket: socket, timeout: 2 * time.Second, maxMsg: 16 << 20, maxPods: 5000}
	for _, o := range opts {
		o(l)
	}
	return l
}

type lister struct {
	socket  string
	timeout time.Duration
	maxMsg  int
	maxPods int
}

func (l *lister) List(ctx context.Context) ([]Allocation, error) {
	if _, err := os.Stat(l.socket); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w at %q", ErrNoSocket, l.socket)
	}
	conn, err := grpc.NewClient("unix://"+l.socket,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(l.maxMsg)))
	if err != nil {
		return nil, fmt.Errorf("connecting to pod resources at %q: %w", l.socket, err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(ctx, l.timeout)
	defer cancel()
	var raw []byte
	err = conn.Invoke(ctx, podresourcesv1.PodResourcesLister_List_FullMethodName, &podresourcesv1.ListPodResourcesRequest{}, &raw, grpc.ForceCodec(rawCodec{}))
	if err != nil {
		return nil, fmt.Errorf("listing pod resources at %q: %w", l.socket, err)
	}
	allocs, pods, err := parseList(raw, l.maxPods)
	if errors.Is(err, errTooMany) {
		return allocs, fmt.Errorf("listing pod resources at %q: more than %d pods, reading the first %d", l.socket, l.maxPods, l.maxPods)
	}
	if err != nil {
		return nil, fmt.Errorf("listing pod resources at %q (%d pods): %w", l.socket, pods, err)
	}
	return allocs, nil
}
