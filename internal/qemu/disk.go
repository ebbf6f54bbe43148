package qemu

// The disks a boot reads: the copy-on-write overlay over the image and the
// UEFI variables, made when missing, and what qemu-img says the image is.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// prepareDisks makes the overlay and the UEFI variables when missing.
func (c *Config) prepareDisks(ctx context.Context) error {
	if c.Disk != "" {
		if _, err := os.Stat(c.Overlay); errors.Is(err, os.ErrNotExist) {
			format, err := imageFormat(ctx, c.QEMUImg, c.Disk)
			if err != nil {
				return err
			}
			abs, err := filepath.Abs(c.Disk)
			if err != nil {
				return err
			}
			args := []string{"create", "-q", "-f", "qcow2", "-b", abs, "-F", format, c.Overlay}
			if c.OverlaySize != "" {
				args = append(args, c.OverlaySize)
			}
			if out, err := exec.CommandContext(ctx, c.QEMUImg, args...).CombinedOutput(); err != nil {
				return fmt.Errorf("qemu-img create: %w: %s", err, strings.TrimSpace(string(out)))
			}
		} else if err != nil {
			return err
		}
	}
	return c.prepareVars()
}

// imageFormat asks qemu-img what a disk is, rather than trusting its name:
// a raw file read as qcow2, or the reverse, would boot garbage. A qcow2
// disk that names a file outside itself, a backing file or an external
// data file, is refused: QEMU would open and boot that file, which can be
// anything the image's author named, on the machine of whoever boots it.
func imageFormat(ctx context.Context, qemuImg, disk string) (string, error) {
	out, err := exec.CommandContext(ctx, qemuImg, "info", "--output=json", disk).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("qemu-img info %s: %s", disk, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("qemu-img info %s: %w", disk, err)
	}
	var info struct {
		Format          string `json:"format"`
		BackingFilename string `json:"backing-filename"`
		FormatSpecific  struct {
			Data struct {
				DataFile string `json:"data-file"`
			} `json:"data"`
		} `json:"format-specific"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return "", fmt.Errorf("qemu-img info %s: %w", disk, err)
	}
	if info.Format != "qcow2" && info.Format != "raw" {
		return "", fmt.Errorf("%s is %s; boot a qcow2 or raw disk", disk, info.Format)
	}
	for what, name := range map[string]string{"backing file": info.BackingFilename, "external data file": info.FormatSpecific.Data.DataFile} {
		if name != "" {
			return "", fmt.Errorf("%s names the %s %q, which a boot would open; boot a disk that stands alone (qemu-img convert -O qcow2 makes one)", disk, what, name)
		}
	}
	return info.Format, nil
}
