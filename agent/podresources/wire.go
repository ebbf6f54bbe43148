package podresources

import (
	"errors"
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// rawCodec hands the kubelet's answer over as the bytes on the wire, which
// parseList reads without building a Go object per pod, container and
// device: a 16 MiB answer of tiny entries decodes into a hundred times its
// size, and the agent wants only the NVIDIA devices of it. Its name is
// "proto", the content subtype the kubelet serves.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) {
	m, ok := v.(proto.Message)
	if !ok {
		return nil, fmt.Errorf("podresources: cannot marshal %T", v)
	}
	return proto.Marshal(m)
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("podresources: cannot unmarshal into %T", v)
	}
	// gRPC may reuse data once Unmarshal returns.
	*b = append((*b)[:0], data...)
	return nil
}

func (rawCodec) Name() string { return "proto" }

// The field numbers of the pod-resources API (k8s.io/kubelet
// pkg/apis/podresources/v1/api.proto) that parseList reads.
const (
	fieldPodResources = 1 // ListPodResourcesResponse.pod_resources
	fieldPodName      = 1 // PodResources.name
	fieldPodNamespace = 2 // PodResources.namespace
	fieldContainers   = 3 // PodResources.containers
	fieldContainer    = 1 // ContainerResources.name
	fieldDevices      = 2 // ContainerResources.devices
	fieldResourceName = 1 // ContainerDevices.resource_name
	fieldDeviceIDs    = 2 // ContainerDevices.device_ids
)

// errTooMany marks an answer with more pods than maxPods.
var errTooMany = errors.New("too many pods")

// parseList reads a ListPodResourcesResponse and keeps the NVIDIA devices
// of the first maxPods pods; it returns errTooMany with them when there
// are more. It reads each message twice, its names and then its entries,
// rather than gather the entries: what it allocates follows the NVIDIA
// allocations, not the answer's size, however many empty containers or
// devices the answer holds.
func parseList(b []byte, maxPods int) ([]Allocation, int, error) {
	var out []Allocation
	pods := 0
	err := eachField(b, func(num protowire.Number, pod []byte) error {
		if num != fieldPodResources {
			return nil
		}
		if pods++; pods > maxPods {
			return errTooMany
		}
		var ns, name string
		err := eachField(pod, func(num protowire.Number, v []byte) error {
			switch num {
			case fieldPodName:
				name = string(v)
			case fieldPodNamespace:
				ns = string(v)
			}
			return nil
		})
		if err != nil {
			return err
		}
		return eachField(pod, func(num protowire.Number, c []byte) error {
			if num != fieldContainers {
				return nil
			}
			var err error
			out, err = containerDevices(out, ns, name, c)
			return err
		})
	})
	return out, pods, err
}

// containerDevices adds the NVIDIA devices of one ContainerResources.
func containerDevices(out []Allocation, ns, pod string, b []byte) ([]Allocation, error) {
	var name string
	err := eachField(b, func(num protowire.Number, v []byte) error {
		if num == fieldContainer {
			name = string(v)
		}
		return nil
	})
	if err != nil {
		return out, err
	}
	err = eachField(b, func(num protowire.Number, d []byte) error {
		if num != fieldDevices {
			return nil
		}
		var resource string
		err := eachField(d, func(num protowire.Number, v []byte) error {
			if num == fieldResourceName {
				resource = string(v)
			}
			return nil
		})
		if err != nil || (resource != GPUResource && !strings.HasPrefix(resource, MIGResourcePrefix)) {
			return err
		}
		a := Allocation{Namespace: ns, Pod: pod, Container: name, Resource: resource}
		err = eachField(d, func(num protowire.Number, v []byte) error {
			if num == fieldDeviceIDs {
				a.DeviceIDs = append(a.DeviceIDs, string(v))
			}
			return nil
		})
		out = append(out, a)
		return err
	})
	return out, err
}

// eachField calls fn with each length-delimited field of the message b,
// skipping fields of other wire types; a malformed message is an error.
func eachField(b []byte, fn func(protowire.Number, []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("reading pod resources: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return fmt.Errorf("reading pod resources: %w", protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return fmt.Errorf("reading pod resources: %w", protowire.ParseError(n))
		}
		if err := fn(num, v); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}
