package gpu_test

import (
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gpuhost/gpuhost/facts/gpu"
)

// FuzzXID holds the kernel log parsers to their promises on any input: no
// panic, bounded output, and fields that are what the line said.
func FuzzXID(f *testing.F) {
	f.Add("Mar  8 10:11:12 dgx-01 kernel: [ 1234.5] NVRM: Xid (PCI:0000:03:00): 79, pid=1234, name=python, GPU has fallen off the bus.")
	f.Add("2025-03-01T11:00:00.123456+00:00 host kernel: NVRM: Xid (PCI:0000:01:00): 48, pid='<unknown>', name=<unknown>, An uncorrectable double bit error")
	f.Add("2025-03-08T10:11:12+0000 dgx-01 kernel: NVRM: Xid (PCI:0000:b1:00): 63, pid=1, journalctl short-iso")
	f.Add("2025-03-08T10:11:12.123456+0000 dgx-01 kernel: NVRM: Xid (PCI:0000:b1:00): 94, short-iso-precise")
	f.Add("NVRM: Xid (PCI:): 79")
	f.Add("NVRM: Xid (PCI:0000:01:00): 9999999")
	f.Fuzz(func(t *testing.T, line string) {
		ev, ok := gpu.ParseXID(line)
		if ok {
			if ev.Code < 0 || ev.Code > 999999 || ev.PCIBusID == "" || !strings.Contains(line, ev.PCIBusID) {
				t.Fatalf("ParseXID(%q) = %+v", line, ev)
			}
			if len(ev.Message) > 200 || !utf8.ValidString(ev.Message) || (ev.Time != "" && !strings.HasPrefix(strings.TrimLeft(line, " "), ev.Time) && !strings.Contains(line, ev.Time)) {
				t.Fatalf("ParseXID(%q) = %+v", line, ev)
			}
		}
		now := time.Date(2025, 3, 8, 12, 0, 0, 0, time.UTC)
		evs := gpu.ParseXIDLog([]byte(line+"\n"+line), now, 7*24*time.Hour)
		if len(evs) > 2 {
			t.Fatalf("%d events from two lines", len(evs))
		}
		gpu.ParseKernelModuleVersion(line)
	})
}

// FuzzNvidiaSMIList holds the parser of nvidia-smi -L, which a container
// prints, to its promise on any output: every UUID it returns is a GPU
// UUID that the output holds on a line of its own.
func FuzzNvidiaSMIList(f *testing.F) {
	f.Add("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-6e8a3c56-8c4f-4b05-a9e3-6e1c21b8d2f1)\n")
	f.Add("GPU 1: NVIDIA A100-SXM4-80GB (UUID: GPU-1a2b)\r\n  MIG 1g.10gb Device 0: (UUID: MIG-2d8c6a44)\n")
	f.Add("No devices were found\n")
	f.Add("GPU 0: x (UUID: GPU-)(UUID: GPU-a)\n")
	f.Fuzz(func(t *testing.T, out string) {
		for uuid := range gpu.ParseNvidiaSMIList([]byte(out)) {
			if !strings.HasPrefix(uuid, "GPU-") || len(uuid) < 5 || !strings.Contains(out, "(UUID: "+uuid+")") {
				t.Fatalf("ParseNvidiaSMIList(%q) returned %q", out, uuid)
			}
		}
	})
}
