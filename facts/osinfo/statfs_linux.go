//go:build linux

package osinfo

import "golang.org/x/sys/unix"

// statfsMagic returns the filesystem type of the mount holding path on the
// real host; only used when the view is rooted at "/".
func statfsMagic(path string) (int64, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return 0, err
	}
	return int64(st.Type), nil
}
