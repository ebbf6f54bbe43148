package qemu

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"slices"
)

// SelftestDiskSize is the size of the disk a selftest reads its inputs
// from and writes its reports to: a tar archive, with room to spare.
const SelftestDiskSize = 64 << 20

// maxReport bounds one file read back from a selftest disk, which the guest
// wrote and so is not to be trusted with this machine's memory.
const maxReport = 32 << 20

// WriteSelftestDisk makes the raw disk that asks a booted image for a
// selftest, holding inputs (file name to content) as a tar archive, which
// deploy/scripts/gpuhost-selftest reads before it writes its reports over
// it.
func WriteSelftestDisk(file string, inputs map[string][]byte) error {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range slices.Sorted(maps.Keys(inputs)) {
		if name != path.Base(name) || name == "." || name == ".." {
			return fmt.Errorf("selftest input %q: a plain file name, please", name)
		}
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(inputs[name])), Typeflag: tar.TypeReg}); err != nil {
			return err
		}
		if _, err := tw.Write(inputs[name]); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if buf.Len() > SelftestDiskSize/2 {
		return fmt.Errorf("selftest inputs of %d bytes leave no room for the reports", buf.Len())
	}
	f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(buf.Bytes()); err != nil {
		f.Close()
		return err
	}
	if err := f.Truncate(SelftestDiskSize); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// ReadSelftestDisk reads the reports a selftest wrote: regular files by
// name. A disk still holding only the inputs, or nothing, is an error: the
// selftest never wrote its reports.
func ReadSelftestDisk(file string) (map[string][]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string][]byte{}
	tr := tar.NewReader(io.LimitReader(f, SelftestDiskSize))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the selftest reports in %s: %w", file, err)
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		name := path.Clean(h.Name)
		if h.Size > maxReport {
			return nil, fmt.Errorf("reading the selftest reports in %s: %s is %d bytes", file, name, h.Size)
		}
		b, err := io.ReadAll(io.LimitReader(tr, maxReport))
		if err != nil {
			return nil, fmt.Errorf("reading the selftest reports in %s: %s: %w", file, name, err)
		}
		out[name] = b
	}
	if _, ok := out["done"]; !ok {
		return nil, fmt.Errorf("the selftest wrote no reports to %s (no \"done\" among %d files)", file, len(out))
	}
	return out, nil
}
