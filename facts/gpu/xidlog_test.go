package gpu_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/gpu"
)

func writeFile(t *testing.T, dir, name string, data []byte, mtime time.Time) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if !mtime.IsZero() {
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
	}
}

func gz(t *testing.T, text string) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func xid(stamp, bus string, code string) string {
	return stamp + " dgx-01 kernel: NVRM: Xid (PCI:" + bus + "): " + code + ", pid=1, name=x, test\n"
}

// TestRotatedLogs reads kern.log and its rotations (plain and gzipped),
// oldest first, each event with its file, syslog's copies de-duplicated, and
// a rotation written before the window skipped unread.
func TestRotatedLogs(t *testing.T) {
	dir := hostTree(t, "550.54.15", xid("Mar  8 10:00:00", "0000:03:00", "79"))
	writeFile(t, dir, "var/log/kern.log.1", []byte(xid("Mar  7 10:00:00", "0000:04:00", "48")), time.Time{})
	writeFile(t, dir, "var/log/kern.log.2.gz", gz(t, xid("Mar  5 10:00:00", "0000:05:00", "94")), time.Time{})
	// Last written before the 7-day window opened: not even opened.
	writeFile(t, dir, "var/log/kern.log.3.gz", []byte("not gzip"), now.Add(-30*24*time.Hour))
	writeFile(t, dir, "var/log/syslog", []byte(xid("Mar  8 10:00:00", "0000:03:00", "79")+xid("Mar  8 11:00:00", "0000:06:00", "63")), time.Time{})

	g := collectHost(t, dgxA100(), dir).GPU
	type got struct {
		code   int
		source string
	}
	var evs []got
	for _, ev := range g.XIDEvents {
		evs = append(evs, got{ev.Code, ev.Source})
	}
	want := []got{
		{94, "/var/log/kern.log.2.gz"},
		{48, "/var/log/kern.log.1"},
		{79, "/var/log/kern.log"},
		{63, "/var/log/syslog"},
	}
	if !slices.Equal(evs, want) {
		t.Errorf("events %+v, want %+v", evs, want)
	}
	if g.XIDSource != "/var/log/kern.log, /var/log/kern.log.1, /var/log/kern.log.2.gz, /var/log/syslog" || g.XIDError != "" {
		t.Errorf("source %q error %q", g.XIDSource, g.XIDError)
	}
}

// TestBadRotation: a corrupt rotation is named, and does not hide the rest.
func TestBadRotation(t *testing.T) {
	dir := hostTree(t, "550.54.15", xid("Mar  8 10:00:00", "0000:03:00", "79"))
	writeFile(t, dir, "var/log/kern.log.2.gz", []byte("not gzip at all"), time.Time{})
	g := collectHost(t, dgxA100(), dir).GPU
	if len(g.XIDEvents) != 1 || g.XIDEvents[0].Code != 79 {
		t.Errorf("events %+v", g.XIDEvents)
	}
	if !strings.Contains(g.XIDSource, "/var/log/kern.log.2.gz") || !strings.Contains(g.XIDSource, "gzip") || g.XIDError != "" {
		t.Errorf("source %q error %q", g.XIDSource, g.XIDError)
	}
}

// fakeJournal answers as journalctl would, newest line first.
func fakeJournal(text string, truncated bool, err error) gpu.JournalReader {
	return func(_ context.Context, root string, since time.Time, limit int64) ([]byte, bool, error) {
		if since != now.Add(-7*24*time.Hour) || limit <= 0 || root == "" {
			return nil, false, errors.New("unexpected arguments")
		}
		return []byte(text), truncated, err
	}
}

// TestJournal: a host without text logs has its XIDs read from the journal,
// oldest first, each marked as from the journal.
func TestJournal(t *testing.T) {
	text := "2025-03-08T11:00:00+0000 dgx-01 kernel: NVRM: Xid (PCI:0000:06:00): 63, pid=1, test\n" +
		"2025-03-08T10:00:00+0000 dgx-01 kernel: NVRM: Xid (PCI:0000:03:00): 79, pid=1, test\n" +
		"2025-02-01T10:00:00+0000 dgx-01 kernel: NVRM: Xid (PCI:0000:03:00): 48, pid=1, outside the window\n"
	g := collectHost(t, dgxA100(), hostTree(t, "550.54.15", ""), gpu.WithJournal(fakeJournal(text, true, nil))).GPU
	want := []facts.XIDEvent{
		{Code: 79, PCIBusID: "0000:03:00", Time: "2025-03-08T10:00:00+0000", Message: "pid=1, test", Source: gpu.JournalSource,
			GPUs: []facts.XIDGPU{{Index: 3, UUID: g.Devices[3].UUID}}},
		{Code: 63, PCIBusID: "0000:06:00", Time: "2025-03-08T11:00:00+0000", Message: "pid=1, test", Source: gpu.JournalSource,
			GPUs: []facts.XIDGPU{{Index: 6, UUID: g.Devices[6].UUID}}},
	}
	if !reflect.DeepEqual(g.XIDEvents, want) {
		t.Errorf("events %+v", g.XIDEvents)
	}
	if !strings.HasPrefix(g.XIDSource, "journal (the newest") || g.XIDError != "" {
		t.Errorf("source %q error %q", g.XIDSource, g.XIDError)
	}

	// Text logs win: the journal is not asked.
	g = collectHost(t, dgxA100(), hostTree(t, "550.54.15", xid("Mar  8 10:00:00", "0000:03:00", "13")), gpu.WithJournal(fakeJournal("", false, errors.New("asked")))).GPU
	if g.XIDSource != "/var/log/kern.log" || g.XIDError != "" {
		t.Errorf("with kern.log: source %q error %q", g.XIDSource, g.XIDError)
	}

	// No logs and no journal: the check must skip, so the error says why.
	g = collectHost(t, dgxA100(), hostTree(t, "550.54.15", ""), gpu.WithJournal(fakeJournal("", false, errors.New("journalctl not found")))).GPU
	if g.XIDSource != "" || !strings.Contains(g.XIDError, "no kernel log file") || !strings.Contains(g.XIDError, "journalctl not found") {
		t.Errorf("no logs: source %q error %q", g.XIDSource, g.XIDError)
	}
}
