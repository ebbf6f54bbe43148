package main

import (
	"strings"
	"testing"
)

// TestHostRootReadOnly reads mount tables as a DaemonSet's container has
// them: the node's root read-only with nothing below it, read-only only at
// its top (readOnly without recursiveReadOnly), overmounted read-only, and
// not mounted at all.
func TestHostRootReadOnly(t *testing.T) {
	const (
		rootfs  = "1 0 0:30 / / rw,relatime - overlay overlay rw,lowerdir=/l\n"
		hostRO  = "2 1 253:1 / /host ro,relatime master:1 - ext4 /dev/vda1 rw\n"
		hostRW  = "2 1 253:1 / /host rw,relatime master:1 - ext4 /dev/vda1 rw\n"
		bootRW  = "3 2 253:2 / /host/boot rw,relatime - vfat /dev/vda15 rw\n"
		bootRO  = "3 2 253:2 / /host/boot ro,relatime - vfat /dev/vda15 rw\n"
		hostOvr = "4 2 253:1 / /host ro,relatime - ext4 /dev/vda1 rw\n"
		sibling = "5 1 0:31 / /hostile rw,relatime - tmpfs tmpfs rw\n"
	)
	for _, c := range []struct {
		name, table, root, want string
	}{
		{"recursive read-only", rootfs + hostRO + bootRO + sibling, "/host", ""},
		{"read-only at the top only", rootfs + hostRO + bootRW, "/host/", "--host-root /host is writable through /host/boot (vfat), as mountinfo says"},
		{"writable", rootfs + hostRW, "/host", "--host-root /host is writable through /host (ext4)"},
		{"overmounted read-only", rootfs + hostRW + hostOvr, "/host", ""},
		{"a directory on a writable mount", rootfs, "/host", "--host-root /host is writable through / (overlay)"},
		{"a directory on a read-only mount", rootfs + hostRO, "/host/node", ""},
		{"the host itself", rootfs, "/", ""},
	} {
		err := hostRootReadOnly(strings.NewReader(c.table), "mountinfo", c.root)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}
