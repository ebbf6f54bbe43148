package scan

import (
	"syscall"
	"testing"
)

// cpuTime is the process's user+system CPU time. Benchmarks report it per
// operation beside ns/op: on a shared machine wall time swings with load,
// CPU time much less.
func cpuTime() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// reportCPU runs loop and reports its CPU time per operation.
func reportCPU(b *testing.B, loop func()) {
	b.Helper()
	start := cpuTime()
	loop()
	if b.N > 0 {
		b.ReportMetric(float64(cpuTime()-start)/float64(b.N), "cpu-ns/op")
	}
}
