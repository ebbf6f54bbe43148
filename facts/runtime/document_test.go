package runtime_test

import (
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/runtime"
)

func init() {
	runtime.ValidateFacts = func(d *runtime.Doc) error {
		f := facts.New(d.Kind(), "test", time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
		f.ContainerRuntime, f.Containers, f.Kubelet = d.ContainerRuntime, d.Containers, d.Kubelet
		for name, filled := range map[string]bool{"container_runtime": d.ContainerRuntime != nil, "containers": d.Containers != nil, "kubelet": d.Kubelet != nil} {
			if filled {
				f.Record(name, facts.StatusOK, "")
			}
		}
		return facts.Validate(*f)
	}
}
