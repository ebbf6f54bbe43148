package osinfo

import (
	"bytes"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/coreos/go-systemd/v22/unit"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

const (
	// maxUnitFile bounds one systemd unit or drop-in file.
	maxUnitFile = 256 << 10
	// maxDropIns bounds the drop-ins read for one slice.
	maxDropIns = 256
)

// topSlices are the slices under the root that hold every process.
var topSlices = []string{"system.slice", "user.slice", "machine.slice"}

// cgroupMemory reads the memory controller's state and the top-level
// slices' limits: from the cgroup tree on a live host, from the slices'
// drop-ins in an image.
func cgroupMemory(fsys sysroot.FS, live bool) (*facts.CgroupMemory, error) {
	m := &facts.CgroupMemory{Slices: []facts.SliceMemory{}}
	if live {
		data, err := fsys.ReadFileLimit("/sys/fs/cgroup/cgroup.subtree_control", 4096)
		if err != nil {
			return nil, fmt.Errorf("reading the root cgroup's controllers: %w", err)
		}
		on := slices.Contains(strings.Fields(string(data)), "memory")
		m.ControllerEnabled = &on
		for _, s := range topSlices {
			dir := "/sys/fs/cgroup/" + s
			if _, err := fsys.Stat(dir); err != nil {
				// Not started yet (user.slice waits for the first
				// login): what applies when it starts is in its units.
				sm, err := sliceDropIns(fsys, s)
				if err != nil {
					return nil, err
				}
				sm.Source += " (slice not started)"
				m.Slices = append(m.Slices, sm)
				continue
			}
			sm := facts.SliceMemory{Name: s, Source: "cgroup"}
			for _, f := range []struct {
				file string
				dst  *string
			}{{"memory.max", &sm.MemoryMax}, {"memory.high", &sm.MemoryHigh}} {
				data, err := fsys.ReadFileLimit(dir+"/"+f.file, 4096)
				switch {
				case err == nil:
					*f.dst = strings.TrimSpace(string(data))
				case !sysroot.IsNotExist(err):
					return nil, fmt.Errorf("reading %s: %w", fsys.Display(dir+"/"+f.file), err)
				}
			}
			m.Slices = append(m.Slices, sm)
		}
		return m, nil
	}
	for _, s := range topSlices {
		sm, err := sliceDropIns(fsys, s)
		if err != nil {
			return nil, err
		}
		m.Slices = append(m.Slices, sm)
	}
	return m, nil
}

// sliceDropIns reads MemoryMax= and MemoryHigh= from a slice's unit and
// drop-ins, in the order systemd applies them: the unit in /etc wins over
// /usr/lib, and drop-ins apply in name order, later ones overriding.
func sliceDropIns(fsys sysroot.FS, name string) (facts.SliceMemory, error) {
	sm := facts.SliceMemory{Name: name, Source: "systemd default: no unit file or drop-in sets a limit"}
	var files []string
	for _, dir := range []string{"/usr/lib/systemd/system", "/lib/systemd/system", "/etc/systemd/system"} {
		if _, err := fsys.Stat(path.Join(dir, name)); err == nil {
			files = append(files, path.Join(dir, name))
		}
	}
	var dropIns []string
	for _, dir := range []string{"/usr/lib/systemd/system", "/lib/systemd/system", "/etc/systemd/system", "/run/systemd/system"} {
		entries, err := fsys.ReadDir(path.Join(dir, name+".d"))
		if err != nil {
			continue
		}
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".conf") {
				dropIns = append(dropIns, path.Join(dir, name+".d", e.Name()))
			}
		}
	}
	if len(dropIns) > maxDropIns {
		return sm, fmt.Errorf("%s: more than %d drop-ins", name, maxDropIns)
	}
	slices.SortStableFunc(dropIns, func(a, b string) int { return strings.Compare(path.Base(a), path.Base(b)) })
	for _, file := range append(files, dropIns...) {
		data, err := fsys.ReadFileLimit(file, maxUnitFile)
		if err != nil {
			return sm, fmt.Errorf("reading %s: %w", fsys.Display(file), err)
		}
		opts, err := unit.DeserializeOptions(bytes.NewReader(data))
		if err != nil {
			return sm, fmt.Errorf("parsing %s: %w", fsys.Display(file), err)
		}
		for _, o := range opts {
			if o.Section != "Slice" {
				continue
			}
			switch o.Name {
			case "MemoryMax":
				sm.MemoryMax, sm.Source = o.Value, fsys.Display(file)
			case "MemoryHigh":
				sm.MemoryHigh, sm.Source = o.Value, fsys.Display(file)
			}
		}
	}
	return sm, nil
}
