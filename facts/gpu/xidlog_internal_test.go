package gpu

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// TestReadLogBounds: neither a file nor what it decompresses to may pass
// the limit, however well it compresses.
func TestReadLogBounds(t *testing.T) {
	dir := t.TempDir()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write(make([]byte, 1<<20)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bomb.gz"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "big"), make([]byte, 4<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	fsys, closer, err := sysroot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	if _, err := readLog(fsys, "/bomb.gz", 64<<10); err == nil || !strings.Contains(err.Error(), "/bomb.gz decompresses to more than") {
		t.Errorf("bomb: %v", err)
	}
	if data, err := readLog(fsys, "/bomb.gz", 2<<20); err != nil || len(data) != 1<<20 {
		t.Errorf("bomb within the limit: %d bytes, %v", len(data), err)
	}
	if _, err := readLog(fsys, "/big", 1<<10); err == nil || !strings.Contains(err.Error(), "/big is larger than") {
		t.Errorf("big: %v", err)
	}
}

// fakeJournalctl puts a journalctl on PATH that runs script.
func fakeJournalctl(t *testing.T, script string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "journalctl"), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
}

func TestRunJournalctl(t *testing.T) {
	ctx := context.Background()
	since := time.Unix(1741000000, 0)
	if _, _, err := runJournalctl(ctx, "/host", since, 1<<20); err == nil || !strings.Contains(err.Error(), "not /host") {
		t.Errorf("other root: %v", err)
	}

	// The arguments ask for kernel lines of every boot since the window
	// opened, newest first.
	fakeJournalctl(t, `echo "$@"`)
	data, truncated, err := runJournalctl(ctx, "/", since, 1<<20)
	if err != nil || truncated || string(data) != "_TRANSPORT=kernel --reverse --utc -o short-iso --no-pager -q --since=@1741000000\n" {
		t.Errorf("args: %q %v %v", data, truncated, err)
	}

	// Output past the limit is cut at a line and said to be.
	fakeJournalctl(t, `while :; do echo "2025-03-08T10:00:00+0000 h kernel: line"; done`)
	data, truncated, err = runJournalctl(ctx, "/", since, 1000)
	if err != nil || !truncated || len(data) > 1000 || len(data) < 900 || !bytes.HasSuffix(data, []byte("line\n")) {
		t.Errorf("endless: %d bytes %v %v", len(data), truncated, err)
	}

	fakeJournalctl(t, `echo "No journal files were found." >&2; exit 1`)
	if _, _, err := runJournalctl(ctx, "/", since, 1<<20); err == nil || !strings.Contains(err.Error(), "No journal files were found.") {
		t.Errorf("failure: %v", err)
	}

	t.Setenv("PATH", t.TempDir())
	if _, _, err := runJournalctl(ctx, "/", since, 1<<20); err == nil || !strings.Contains(err.Error(), "journalctl not found") {
		t.Errorf("missing: %v", err)
	}
}

// TestParseXIDLogKeepsNewest: a log flooded with Xids yields the newest
// maxXIDEvents, oldest first, read in either order.
func TestParseXIDLogKeepsNewest(t *testing.T) {
	now := time.Date(2025, 3, 8, 12, 0, 0, 0, time.UTC)
	var oldestFirst, newestFirst []byte
	const n = 2*maxXIDEvents + 345
	for i := range n {
		line := []byte("2025-03-08T10:00:00+00:00 h kernel: NVRM: Xid (PCI:0000:03:00): " + strconv.Itoa(i) + ", x\n")
		oldestFirst = append(oldestFirst, line...)
		newestFirst = append(line, newestFirst...)
	}
	for name, evs := range map[string][]facts.XIDEvent{
		"oldest first": parseXIDLog(oldestFirst, now, 0, false),
		"newest first": func() []facts.XIDEvent {
			evs := parseXIDLog(newestFirst, now, 0, true)
			slices.Reverse(evs)
			return evs
		}(),
	} {
		if len(evs) != maxXIDEvents || evs[0].Code != n-maxXIDEvents || evs[len(evs)-1].Code != n-1 {
			t.Errorf("%s: %d events, %d..%d", name, len(evs), evs[0].Code, evs[len(evs)-1].Code)
		}
	}
}

// TestAttributeXIDs matches events to GPUs by domain, bus and device as
// numbers, whatever the width or case each side writes them in, and leaves
// an event at an address NVML does not list, or an unreadable one, with no
// GPU.
func TestAttributeXIDs(t *testing.T) {
	g := &facts.GPU{
		Devices: []facts.GPUDevice{
			{Index: 0, UUID: "GPU-0", PCIBusID: "00000000:07:00.0"},
			{Index: 1, UUID: "GPU-1", PCIBusID: "00000001:07:00.0"},
			{Index: 2, UUID: "GPU-2", PCIBusID: "00000000:B1:00.0"},
		},
		XIDEvents: []facts.XIDEvent{
			{Code: 79, PCIBusID: "0000:07:00"},
			{Code: 79, PCIBusID: "0001:07:00"},
			{Code: 48, PCIBusID: "0000:b1:00"},
			{Code: 48, PCIBusID: "0000:41:00"},
			{Code: 48, PCIBusID: "07:00"},
			{Code: 48, PCIBusID: "0000:0x.*:00"},
			{Code: 48, PCIBusID: ""},
		},
	}
	attributeXIDs(g)
	want := [][]facts.XIDGPU{
		{{Index: 0, UUID: "GPU-0"}},
		{{Index: 1, UUID: "GPU-1"}},
		{{Index: 2, UUID: "GPU-2"}},
		nil, nil, nil, nil,
	}
	for i, ev := range g.XIDEvents {
		if !reflect.DeepEqual(ev.GPUs, want[i]) {
			t.Errorf("event at %q: GPUs %+v, want %+v", ev.PCIBusID, ev.GPUs, want[i])
		}
	}
}
