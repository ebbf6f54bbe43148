package main

import (
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/moby/sys/mountinfo"
)

// hostRootReadOnly refuses an agent that could write to the host it
// judges: the mount that holds root and every mount below it, in this
// process's mount table, must be read-only. A DaemonSet mounts the node's
// root with readOnly; without recursiveReadOnly (a runtime that cannot
// make it, such as containerd before 2.0) each filesystem mounted below
// it, /boot, /var, the node's /proc, stays writable through /host. The
// agent on the host itself (root "/") is not judged: it runs as the
// host's own service.
func hostRootReadOnly(table io.Reader, name, root string) error {
	if root == "" || filepath.Clean(root) == "/" {
		return nil
	}
	root = filepath.Clean(root)
	mounts, err := mountinfo.GetMountsFromReader(table, nil)
	if err != nil {
		return fmt.Errorf("reading %s: %w", name, err)
	}
	// The last entry for a mount point is the one on top, the one a path
	// there reaches; root lies on the deepest mount point above it.
	top := map[string]*mountinfo.Info{}
	holder := ""
	for _, m := range mounts {
		under := strings.HasPrefix(m.Mountpoint+"/", root+"/")
		above := m.Mountpoint == "/" || strings.HasPrefix(root+"/", m.Mountpoint+"/")
		if under || above {
			top[m.Mountpoint] = m
		}
		if above && len(m.Mountpoint) >= len(holder) {
			holder = m.Mountpoint
		}
	}
	var writable []string
	for _, p := range slices.Sorted(maps.Keys(top)) {
		m := top[p]
		if p != holder && !strings.HasPrefix(p+"/", root+"/") {
			continue
		}
		if !slices.Contains(strings.Split(m.Options, ","), "ro") {
			writable = append(writable, p+" ("+m.FSType+")")
		}
	}
	if len(writable) > 0 {
		return fmt.Errorf("--host-root %s is writable through %s, as %s says; the agent does not run where it could change what it judges: "+
			"mount the host's root with recursiveReadOnly: Enabled (a runtime that supports it, such as containerd 2.0 or later), "+
			"or pass --allow-writable-host-root for a copy of a root that is not a host's", root, strings.Join(writable, ", "), name)
	}
	return nil
}

// checkHostRoot applies hostRootReadOnly to this process's mount table.
func checkHostRoot(root string) error {
	if root == "" || filepath.Clean(root) == "/" {
		return nil
	}
	const table = "/proc/self/mountinfo"
	f, err := os.Open(table)
	if err != nil {
		return fmt.Errorf("checking that --host-root %s is read-only: %w", root, err)
	}
	defer f.Close()
	return hostRootReadOnly(f, table, root)
}
