//go:build linux

package encryption

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The device-mapper ioctl interface of <linux/dm-ioctl.h>, version 4.
const (
	dmIoctlSize     = 312 // sizeof(struct dm_ioctl)
	dmTargetSpecLen = 40  // sizeof(struct dm_target_spec)
	dmNameLen       = 128
	dmTableStatus   = 12 // DM_TABLE_STATUS_CMD
	// dmStatusTableFlag asks for the table rather than the status line.
	dmStatusTableFlag = 1 << 4
	// dmSecureDataFlag asks the kernel to wipe the buffers that held the
	// table, key included.
	dmSecureDataFlag = 1 << 15
	// dmBufferFullFlag says the answer did not fit.
	dmBufferFullFlag = 1 << 8
	// dmTableBuffer is room for a table of a few targets; each crypt line
	// is under 300 bytes.
	dmTableBuffer = 16 << 10
)

// dmTableStatusIoctl is _IOWR(0xfd, DM_TABLE_STATUS_CMD, struct dm_ioctl).
const dmTableStatusIoctl = 3<<30 | dmIoctlSize<<16 | 0xfd<<8 | dmTableStatus

// kernelDMTable asks the kernel for the table of the device-mapper device
// called name, through the control node under root (the host's /dev). The
// buffer that held the key is cleared before returning.
func kernelDMTable(root, name string) ([]dmTarget, error) {
	if len(name) == 0 || len(name) >= dmNameLen {
		return nil, fmt.Errorf("device-mapper name %q is not one the kernel takes", name)
	}
	// os.Root keeps every link on the way inside the scanned root, so a
	// tree cannot point the scan at another node.
	r, err := os.OpenRoot(root)
	if err != nil {
		return nil, fmt.Errorf("opening the device-mapper control node: %w", err)
	}
	defer r.Close()
	// Checked before opening, which is read-write: a plain file in a
	// scanned tree is never opened for writing.
	if st, err := r.Lstat("dev/mapper/control"); err != nil {
		return nil, fmt.Errorf("opening the device-mapper control node: %w", err)
	} else if st.Mode()&os.ModeCharDevice == 0 {
		return nil, fmt.Errorf("%s is not a character device", filepath.Join(root, "dev/mapper/control"))
	}
	f, err := r.OpenFile("dev/mapper/control", os.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the device-mapper control node: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("opening the device-mapper control node: %w", err)
	}
	if st.Mode()&os.ModeCharDevice == 0 {
		return nil, fmt.Errorf("%s is not a character device", filepath.Join(root, "dev/mapper/control"))
	}
	buf := make([]byte, dmTableBuffer)
	defer clear(buf)
	le := binary.NativeEndian
	le.PutUint32(buf[0:], 4) // interface version 4.0.0
	le.PutUint32(buf[12:], dmTableBuffer)
	le.PutUint32(buf[16:], dmIoctlSize)
	le.PutUint32(buf[28:], dmStatusTableFlag|dmSecureDataFlag)
	copy(buf[48:48+dmNameLen], name)
	if _, _, errno := unix.Syscall(unix.SYS_IOCTL, f.Fd(), dmTableStatusIoctl, uintptr(unsafe.Pointer(&buf[0]))); errno != 0 {
		return nil, fmt.Errorf("DM_TABLE_STATUS for %s: %w", name, errno)
	}
	return parseDMTableStatus(buf)
}

// parseDMTableStatus reads the targets the kernel wrote after the dm_ioctl
// header: each a dm_target_spec, then its parameters up to a NUL, the next
// spec at an offset from the start of the data.
func parseDMTableStatus(buf []byte) ([]dmTarget, error) {
	if len(buf) < dmIoctlSize {
		return nil, errors.New("device-mapper answer shorter than its header")
	}
	le := binary.NativeEndian
	size := int(le.Uint32(buf[12:]))
	start := int(le.Uint32(buf[16:]))
	count := int(le.Uint32(buf[20:]))
	flags := le.Uint32(buf[28:])
	if flags&dmBufferFullFlag != 0 {
		return nil, errors.New("device-mapper table larger than the buffer")
	}
	if size > len(buf) || start < dmIoctlSize || start > size || count > 1024 {
		return nil, errors.New("device-mapper answer has bad sizes")
	}
	data := buf[start:size]
	var out []dmTarget
	at := 0
	for i := 0; i < count; i++ {
		if at < 0 || at+dmTargetSpecLen > len(data) {
			return nil, errors.New("device-mapper target past the end of the answer")
		}
		spec := data[at : at+dmTargetSpecLen]
		typ, _, _ := bytes.Cut(spec[24:40], []byte{0})
		params, _, ok := bytes.Cut(data[at+dmTargetSpecLen:], []byte{0})
		if !ok {
			return nil, errors.New("device-mapper target parameters not terminated")
		}
		out = append(out, newDMTarget(string(typ), params))
		next := int(le.Uint32(spec[20:]))
		if next <= at {
			break
		}
		at = next
	}
	return out, nil
}
