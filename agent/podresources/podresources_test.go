package podresources

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/gpuhost/gpuhost/internal/testutil/kubelet"
)

func TestListKeepsNVIDIADevicesOnly(t *testing.T) {
	k := kubelet.ServePodResources(t,
		kubelet.Pod("ml", "trainer-0", map[string][]*podresourcesv1.ContainerDevices{
			"train":   {kubelet.Devices("nvidia.com/gpu", "GPU-aaa", "GPU-bbb"), kubelet.Devices("example.com/nic", "eth9")},
			"sidecar": nil,
		}),
		kubelet.Pod("inference", "llm-7f9", map[string][]*podresourcesv1.ContainerDevices{
			"serve": {kubelet.Devices("nvidia.com/mig-1g.10gb", "MIG-ccc")},
		}),
	)
	got, err := New(k.Socket).List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []Allocation{
		{Namespace: "ml", Pod: "trainer-0", Container: "train", Resource: "nvidia.com/gpu", DeviceIDs: []string{"GPU-aaa", "GPU-bbb"}},
		{Namespace: "inference", Pod: "llm-7f9", Container: "serve", Resource: "nvidia.com/mig-1g.10gb", DeviceIDs: []string{"MIG-ccc"}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("allocations\n got %v\nwant %v", got, want)
	}
}

func TestListWithoutASocket(t *testing.T) {
	_, err := New(filepath.Join(t.TempDir(), "kubelet.sock")).List(context.Background())
	if !errors.Is(err, ErrNoSocket) {
		t.Errorf("error %v, want ErrNoSocket", err)
	}
}

// A socket nobody answers on (a kubelet that died and left it) is an error
// within the timeout, not a hang and not "no socket".
func TestListGivesUpOnADeadSocket(t *testing.T) {
	dead := filepath.Join(t.TempDir(), "kubelet.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: dead, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	ln.SetUnlinkOnClose(false)
	ln.Close()
	start := time.Now()
	_, err = New(dead, WithTimeout(300*time.Millisecond)).List(context.Background())
	if err == nil || errors.Is(err, ErrNoSocket) || !strings.Contains(err.Error(), "listing pod resources") {
		t.Errorf("error %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("List took %s with a 300ms timeout", d)
	}
}

func TestListBoundsTheAnswer(t *testing.T) {
	var pods []*podresourcesv1.PodResources
	for i := range 50 {
		pods = append(pods, kubelet.Pod("ns", fmt.Sprintf("pod-%02d", i), map[string][]*podresourcesv1.ContainerDevices{
			"c": {kubelet.Devices("nvidia.com/gpu", fmt.Sprintf("GPU-%02d", i))},
		}))
	}
	k := kubelet.ServePodResources(t, pods...)
	got, err := New(k.Socket, WithMaxPods(10)).List(context.Background())
	// The first pods are kept, with an error saying the rest were dropped.
	if err == nil || len(got) != 10 || got[0].DeviceIDs[0] != "GPU-00" || got[9].Pod != "pod-09" {
		t.Errorf("with 10 pods allowed: %v, error %v", got, err)
	}
	// An answer over the message bound is refused by gRPC itself.
	_, err = New(k.Socket, WithMaxMessageSize(256)).List(context.Background())
	if err == nil || !strings.Contains(err.Error(), "larger than max") {
		t.Errorf("with 256 bytes allowed: %v", err)
	}
}
