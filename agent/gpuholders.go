package agent

import (
	"cmp"
	"context"
	"errors"
	"strconv"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuhost/gpuhost/agent/podresources"
)

// holder is the container a GPU's series are attributed to; the zero value
// is none, and labels them with empty values, as dcgm-exporter leaves a GPU
// no pod holds.
type holder struct{ namespace, pod, container string }

func (h holder) compare(o holder) int {
	return cmp.Or(cmp.Compare(h.namespace, o.namespace), cmp.Compare(h.pod, o.pod), cmp.Compare(h.container, o.container))
}

// holders asks the kubelet which container holds each GPU, by UUID. A GPU
// several containers share (MIG slices, time-slicing) is attributed to one
// of them, the first by namespace, pod and container, as dcgm-exporter
// attributes it to one without its virtual-GPU mode. Where the kubelet's
// socket is absent the host is not a Kubernetes node: that is said once, and
// no GPU has a holder. Any other failure counts as a sample error.
func (s *GPUSampler) holders(ctx context.Context, gpus []gpu) map[string]holder {
	if s.pods == nil {
		return nil
	}
	allocs, err := s.pods.List(ctx)
	if err != nil {
		if msg := err.Error(); msg != s.podErr {
			s.podErr = msg
			if errors.Is(err, podresources.ErrNoSocket) {
				s.log.Info("agent: GPU series carry no workload labels (not a Kubernetes node?)", "err", err)
			} else {
				s.log.Warn("agent: reading the kubelet's pod resources failed", "err", err)
			}
		}
		if errors.Is(err, podresources.ErrNoSocket) {
			return nil
		}
		s.errors.WithLabelValues("PodResourcesList").Inc()
	} else if s.podErr != "" {
		s.podErr = ""
		s.log.Info("agent: reading the kubelet's pod resources works again")
	}
	out := map[string]holder{}
	for _, a := range allocs {
		h := holder{a.Namespace, a.Pod, a.Container}
		for _, id := range a.DeviceIDs {
			uuid, ok := s.resolveDevice(id, gpus)
			if !ok {
				continue
			}
			if cur, held := out[uuid]; !held || h.compare(cur) < 0 {
				out[uuid] = h
			}
		}
	}
	return out
}

// resolveDevice finds the GPU a device plugin's device ID names: a GPU
// UUID, a MIG device's UUID (its parent GPU), an index (the plugin's index
// ID strategy), or GKE's nvidiaN (the device's minor number). A ::N suffix
// (a shared replica of the GPU) or a /giN or /vgpuN part (GKE's MIG and
// sharing) still names the GPU before it.
func (s *GPUSampler) resolveDevice(id string, gpus []gpu) (string, bool) {
	id, _, _ = strings.Cut(id, "::")
	id, _, _ = strings.Cut(id, "/")
	find := func(match func(g gpu) bool) (string, bool) {
		for _, g := range gpus {
			if match(g) {
				return g.uuid, true
			}
		}
		return "", false
	}
	switch {
	case strings.HasPrefix(id, "MIG-"):
		mig, ret := s.lib.DeviceGetHandleByUUID(id)
		if !s.ok("DeviceGetHandleByUUID", ret) {
			return "", false
		}
		parent, ret := mig.GetDeviceHandleFromMigDeviceHandle()
		if !s.ok("GetDeviceHandleFromMigDeviceHandle", ret) {
			return "", false
		}
		uuid, ret := parent.GetUUID()
		if ret != nvml.SUCCESS {
			return "", false
		}
		return find(func(g gpu) bool { return g.uuid == uuid })
	case strings.HasPrefix(id, "GPU-"):
		return find(func(g gpu) bool { return g.uuid == id })
	case strings.HasPrefix(id, "nvidia"):
		return find(func(g gpu) bool { return g.device == id })
	}
	i, err := strconv.Atoi(id)
	if err != nil {
		return "", false
	}
	return find(func(g gpu) bool { return g.index == i })
}
