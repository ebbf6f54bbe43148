package rootfs

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
)

// State bag keys the steps share.
const (
	stateConfig  = "config"
	stateUI      = "ui"
	stateHook    = "hook"
	stateRootfs  = "rootfs"  // string: the rootfs directory
	stateMountNS = "mountns" // *mountNS while mounts are up
	stateWrapper = "wrappedCommand"
	stateFiles   = "output_files" // []string: what the artifact consists of
)

// halt records err in the state, shows it and halts the build.
func halt(state multistep.StateBag, err error) multistep.StepAction {
	state.Put("error", err)
	state.Get(stateUI).(packersdk.Ui).Error(err.Error())
	return multistep.ActionHalt
}

// unsafeIOConf is the dpkg configuration that lives only while mmdebstrap
// runs.
const unsafeIOConf = "etc/dpkg/dpkg.cfg.d/99gpuhost-bootstrap-unsafe-io"

// timedStep runs a step and records how long its Run took.
type timedStep struct {
	name string
	step multistep.Step
	t    *timings
}

func (s *timedStep) Run(ctx context.Context, state multistep.StateBag) multistep.StepAction {
	start := time.Now()
	defer func() { s.t.add(s.name, time.Since(start)) }()
	return s.step.Run(ctx, state)
}

func (s *timedStep) Cleanup(state multistep.StateBag) { s.step.Cleanup(state) }

// timings collects step durations in the order the steps ran.
type timings struct {
	mu    sync.Mutex
	names []string
	durs  []time.Duration
}

func (t *timings) add(name string, d time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.names = append(t.names, name)
	t.durs = append(t.durs, d)
}

// table renders the timings as an aligned two-column table with a total.
func (t *timings) table() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var b strings.Builder
	var total time.Duration
	w := 12
	for _, n := range t.names {
		w = max(w, len(n))
	}
	fmt.Fprintf(&b, "%-*s %9s\n", w, "step", "seconds")
	for i, n := range t.names {
		fmt.Fprintf(&b, "%-*s %9.1f\n", w, n, t.durs[i].Seconds())
		total += t.durs[i]
	}
	fmt.Fprintf(&b, "%-*s %9.1f", w, "total", total.Seconds())
	return b.String()
}
