package gpu_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/target/domains"
)

// sysfsTree lays out PCI functions as the kernel does: the real directories
// under /sys/devices, and /sys/bus/pci/devices holding relative links to
// them, with each bound driver as a link into /sys/bus/pci/drivers.
func sysfsTree(t *testing.T, fns map[string][3]string, drivers map[string]string) string {
	t.Helper()
	root := t.TempDir()
	addSysfs(t, root, fns, drivers)
	return root
}

// addSysfs adds the PCI functions to an existing tree.
func addSysfs(t *testing.T, root string, fns map[string][3]string, drivers map[string]string) {
	t.Helper()
	bus := filepath.Join(root, "sys/bus/pci/devices")
	must(t, os.MkdirAll(bus, 0o755))
	for addr, ids := range fns {
		dev := filepath.Join(root, "sys/devices/pci0000:00", addr)
		must(t, os.MkdirAll(dev, 0o755))
		for i, name := range []string{"vendor", "device", "class"} {
			must(t, os.WriteFile(filepath.Join(dev, name), []byte(ids[i]+"\n"), 0o444))
		}
		must(t, os.WriteFile(filepath.Join(dev, "numa_node"), []byte("1\n"), 0o444))
		if drv, ok := drivers[addr]; ok {
			must(t, os.MkdirAll(filepath.Join(root, "sys/bus/pci/drivers", drv), 0o755))
			must(t, os.Symlink("../../../bus/pci/drivers/"+drv, filepath.Join(dev, "driver")))
		}
		must(t, os.Symlink("../../../devices/pci0000:00/"+addr, filepath.Join(bus, addr)))
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func collectPCI(t *testing.T, root string, live bool) (*facts.Facts, error) {
	t.Helper()
	fsys, closer, err := sysroot.Open(root)
	must(t, err)
	t.Cleanup(func() { closer.Close() })
	f := facts.New(facts.KindHost, "h", time.Now())
	return f, domains.PCI().Collect(context.Background(), &collect.Env{FS: fsys, Live: live}, f)
}

func TestPCIListsNVIDIAFunctions(t *testing.T) {
	root := sysfsTree(t, map[string][3]string{
		"0000:00:1f.0": {"0x8086", "0x0d57", "0x060000"},
		"0000:07:00.0": {"0x10de", "0x20B2", "0x030200"},
		"0000:07:00.1": {"0x10de", "0x1aef", "0x040300"},
		"0000:0f:00.0": {"0x10de", "0x20b2", "0x030200"},
		"0000:c1:00.0": {"0x10de", "0x1af1", "0x068000"},
	}, map[string]string{"0000:07:00.0": "nvidia"})
	f, err := collectPCI(t, root, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := facts.Validate(f); err != nil {
		t.Fatal(err)
	}
	var gpus, others []string
	for _, d := range f.PCI.Devices {
		if d.GPU {
			gpus = append(gpus, d.Address+"="+d.Device+"/"+d.Driver)
		} else {
			others = append(others, d.Address)
		}
		if d.NUMANode == nil || *d.NUMANode != 1 {
			t.Errorf("%s: numa node %v, want 1", d.Address, d.NUMANode)
		}
	}
	if got := strings.Join(gpus, " "); got != "0000:07:00.0=0x20b2/nvidia 0000:0f:00.0=0x20b2/" {
		t.Errorf("GPUs: %s", got)
	}
	if got := strings.Join(others, " "); got != "0000:07:00.1 0000:c1:00.0" {
		t.Errorf("other NVIDIA functions: %s", got)
	}
}

func TestPCIWithoutSysfsIsUnavailable(t *testing.T) {
	_, err := collectPCI(t, t.TempDir(), true)
	var o *collect.Outcome
	if !errors.As(err, &o) || o.Status != facts.StatusUnavailable {
		t.Fatalf("got %v, want unavailable", err)
	}
	if _, err := collectPCI(t, t.TempDir(), false); !errors.As(err, &o) || o.Status != facts.StatusNotApplicable {
		t.Fatalf("offline: got %v, want not_applicable", err)
	}
}

// A link that leaves the tree is resolved inside it, as a chroot would:
// the build machine's own PCI bus is never read.
func TestPCIStaysInsideTheRoot(t *testing.T) {
	root := t.TempDir()
	bus := filepath.Join(root, "sys/bus/pci/devices")
	must(t, os.MkdirAll(bus, 0o755))
	must(t, os.Symlink("/sys/devices/pci0000:00/0000:00:00.0", filepath.Join(bus, "0000:00:00.0")))
	f, err := collectPCI(t, root, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.PCI.Devices) != 0 {
		t.Fatalf("read a function from outside the root: %+v", f.PCI.Devices)
	}
}

func TestPCIHostileAttributeIsAnError(t *testing.T) {
	root := sysfsTree(t, map[string][3]string{"0000:07:00.0": {"0x10de", "0x20b2", "0x030200"}}, nil)
	class := filepath.Join(root, "sys/devices/pci0000:00/0000:07:00.0/class")
	must(t, os.Remove(class))
	must(t, os.WriteFile(class, make([]byte, 1<<20), 0o444))
	if _, err := collectPCI(t, root, true); err == nil || !strings.Contains(err.Error(), "0000:07:00.0") {
		t.Fatalf("got %v, want an error naming the function", err)
	}
}

// aerFile is an AER counter file as the kernel writes it: one line per
// error type, then the total.
func aerFile(total string, n int) string {
	return fmt.Sprintf("Receiver Error %d\nBad TLP 0\nBad DLLP 0\n%s %d\n", n, total, n)
}

// A GPU's AER counters are read from sysfs and judged by GH-GPU-026: a
// clean one passes, an uncorrectable error fails it naming the function, a
// counter file cut short is an error of the check, and a GPU function with
// no counters is not judged. Non-GPU functions' counters are not read.
func TestPCIAERCounters(t *testing.T) {
	s := newScanner(t)
	const gpuAddr, switchAddr = "0000:07:00.0", "0000:c1:00.0"
	for name, tc := range map[string]struct {
		files  map[string]string // under the GPU's directory
		status string
		msg    string
	}{
		"clean": {map[string]string{"aer_dev_correctable": aerFile("TOTAL_ERR_COR", 4), "aer_dev_nonfatal": aerFile("TOTAL_ERR_NONFATAL", 0), "aer_dev_fatal": aerFile("TOTAL_ERR_FATAL", 0)},
			reports.StatusPass, ""},
		"uncorrectable": {map[string]string{"aer_dev_correctable": aerFile("TOTAL_ERR_COR", 0), "aer_dev_nonfatal": aerFile("TOTAL_ERR_NONFATAL", 2), "aer_dev_fatal": aerFile("TOTAL_ERR_FATAL", 1)},
			reports.StatusFail, "the GPU at 0000:07:00.0 has reported 1 fatal and 2 non-fatal uncorrectable PCIe errors (AER) since boot"},
		"cut short": {map[string]string{"aer_dev_correctable": "Receiver Error 2\n", "aer_dev_nonfatal": aerFile("TOTAL_ERR_NONFATAL", 0), "aer_dev_fatal": aerFile("TOTAL_ERR_FATAL", 0)},
			reports.StatusError, "has no TOTAL_ERR_COR line with a count"},
		"no counters": {nil, reports.StatusPass, ""},
	} {
		t.Run(name, func(t *testing.T) {
			root := sysfsTree(t, map[string][3]string{gpuAddr: {"0x10de", "0x20b2", "0x030200"}, switchAddr: {"0x10de", "0x1af1", "0x068000"}}, nil)
			for file, text := range tc.files {
				must(t, os.WriteFile(filepath.Join(root, "sys/devices/pci0000:00", gpuAddr, file), []byte(text), 0o444))
			}
			must(t, os.WriteFile(filepath.Join(root, "sys/devices/pci0000:00", switchAddr, "aer_dev_fatal"), []byte(aerFile("TOTAL_ERR_FATAL", 9)), 0o444))
			f, err := collectPCI(t, root, true)
			if err != nil {
				t.Fatal(err)
			}
			f.Collectors = map[string]facts.CollectorStatus{"pci": {Status: facts.StatusOK}}
			if err := facts.Validate(*f); err != nil {
				t.Fatal(err)
			}
			for _, d := range f.PCI.Devices {
				if !d.GPU && (d.AER != nil || d.AERError != "") {
					t.Errorf("%s is no GPU, yet its AER was read: %+v", d.Address, d)
				}
			}
			r := scanFacts(t, s, f)["GH-GPU-026"]
			if r.Status != tc.status || (tc.msg != "" && (len(r.Messages) != 1 || !strings.Contains(r.Messages[0], tc.msg))) {
				t.Errorf("GH-GPU-026: %s %q, want %s with %q", r.Status, r.Messages, tc.status, tc.msg)
			}
		})
	}
}
