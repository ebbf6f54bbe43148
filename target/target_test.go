package target

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/target/collector"
)

// Every collector's output, on every kind of tree we meet, must validate
// against the published schema: saved facts are a contract with policies.
func TestCollectedFactsMatchTheSchema(t *testing.T) {
	ctx := context.Background()
	trees := map[string]string{
		"hardened": "../cmd/gpuhost/testdata/rootfs-hardened",
		"weak":     "../cmd/gpuhost/testdata/rootfs-weak",
		"tls":      "../facts/tls/testdata/hardened",
		"ssh":      "../facts/ssh/testdata/hardened",
		"runtime":  "../facts/runtime/testdata/hardened",
		"empty":    t.TempDir(),
	}
	for name, dir := range trees {
		f, err := Rootfs(ctx, dir, Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := facts.Validate(f); err != nil {
			t.Errorf("%s rootfs facts: %v", name, err)
		}
		if len(f.Collectors) != len(All()) {
			t.Errorf("%s: %d collectors reported, want %d", name, len(f.Collectors), len(All()))
		}
	}
	host, err := Host(ctx, "/", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := facts.Validate(host); err != nil {
		t.Errorf("host facts: %v", err)
	}
	if host.Target.Kind != facts.KindHost {
		t.Errorf("host target kind %q", host.Target.Kind)
	}
}

type panicky struct{}

func (panicky) Name() string    { return "panicky" }
func (panicky) Needs() []string { return nil }
func (panicky) Collect(context.Context, *collect.Env, *facts.Facts) error {
	var m map[string]int
	m["boom"]++
	return nil
}

type absent struct{}

func (absent) Name() string    { return "absent" }
func (absent) Needs() []string { return nil }
func (absent) Collect(context.Context, *collect.Env, *facts.Facts) error {
	return collect.NotApplicable("nothing here")
}

type broken struct{}

func (broken) Name() string    { return "broken" }
func (broken) Needs() []string { return nil }
func (broken) Collect(context.Context, *collect.Env, *facts.Facts) error {
	return errors.New("parsing /etc/x: line 3: garbage")
}

func TestCollectorOutcomesAreRecorded(t *testing.T) {
	f, err := Rootfs(context.Background(), t.TempDir(), Options{Collectors: []collector.Collector{panicky{}, absent{}, broken{}}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"panicky": facts.StatusError, "absent": facts.StatusNotApplicable, "broken": facts.StatusError}
	for name, status := range want {
		if got := f.Collectors[name]; got.Status != status || got.Reason == "" {
			t.Errorf("%s: got %+v, want status %s with a reason", name, got, status)
		}
	}
}

func TestCancelledScanRecordsErrors(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f, err := Rootfs(ctx, t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, st := range f.Collectors {
		if st.Status != facts.StatusError {
			t.Errorf("%s ran after cancellation: %+v", name, st)
		}
	}
}

func TestRootfsMustBeADirectory(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	for _, p := range []string{fifo, file, filepath.Join(dir, "missing")} {
		if _, err := Rootfs(context.Background(), p, Options{}); err == nil {
			t.Errorf("Rootfs(%s) succeeded", p)
		}
	}
}
