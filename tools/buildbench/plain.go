package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// plainBuild is the baseline: what someone without our builder would run to
// get the same image. mmdebstrap and the chroot run in private mount and
// PID namespaces (unshare), as ours do, so nothing outlives them.
type plainBuild struct {
	dir                            string
	suite, variant, mirror         string
	components, include, imageSize string
	install                        []string
	timeout                        time.Duration
}

// plainResult is the baseline's wall time and its steps.
type plainResult struct {
	wall  time.Duration
	steps []timing
}

func (b *plainBuild) run() (*plainResult, error) {
	if err := os.RemoveAll(b.dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(b.dir, 0o755); err != nil {
		return nil, err
	}
	rootfs := filepath.Join(b.dir, "rootfs")
	img := filepath.Join(b.dir, "rootfs.raw.tmp")
	// The same packages: the pins as package=version, and no recommends,
	// as the gpuhost-gpu plan installs them; policy-rc.d keeps package
	// scripts from starting services on the build machine.
	chroot := `set -e
r=$1; shift
mount -t proc proc "$r/proc"
mount -t sysfs -o ro sysfs "$r/sys"
mount --rbind /dev "$r/dev"
printf '#!/bin/sh\nexit 101\n' >"$r/usr/sbin/policy-rc.d"
chmod 0755 "$r/usr/sbin/policy-rc.d"
export DEBIAN_FRONTEND=noninteractive LC_ALL=C
chroot "$r" apt-get update
chroot "$r" apt-get install -y --no-install-recommends "$@"
rm -f "$r/usr/sbin/policy-rc.d"
`
	mmdebstrap := []string{"--mount", "--propagation", "private", "--pid", "--fork", "mmdebstrap", "--mode=root",
		"--variant=" + b.variant, "--components=" + b.components}
	if b.include != "" {
		mmdebstrap = append(mmdebstrap, "--include="+b.include)
	}
	mmdebstrap = append(mmdebstrap, b.suite, rootfs, b.mirror)
	steps := []struct {
		name string
		run  func(ctx context.Context) error
	}{
		{"mmdebstrap", func(ctx context.Context) error { return b.cmd(ctx, "unshare", mmdebstrap...) }},
		{"apt-get", func(ctx context.Context) error {
			args := append([]string{"--mount", "--propagation", "private", "--pid", "--fork", "sh", "-c", chroot, "chroot", rootfs}, b.install...)
			return b.cmd(ctx, "unshare", args...)
		}},
		{"pack", func(ctx context.Context) error {
			// The builder's qcow2 output: a sparse file, mkfs.ext4 -d,
			// then a compressed qcow2.
			if err := b.cmd(ctx, "truncate", "-s", b.imageSize, img); err != nil {
				return err
			}
			defer os.Remove(img)
			if err := b.cmd(ctx, "mkfs.ext4", "-q", "-F", "-L", "rootfs", "-d", rootfs, img, b.imageSize); err != nil {
				return err
			}
			return b.cmd(ctx, "qemu-img", "convert", "-c", "-m", "16", "-W", "-O", "qcow2", img, filepath.Join(b.dir, "rootfs.qcow2"))
		}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), b.timeout)
	defer cancel()
	res := &plainResult{}
	start := time.Now()
	for _, s := range steps {
		t := time.Now()
		if err := s.run(ctx); err != nil {
			return nil, fmt.Errorf("plain build, step %s (output in %s): %w", s.name, filepath.Join(b.dir, "build.log"), err)
		}
		res.steps = append(res.steps, timing{s.name, time.Since(t)})
	}
	res.wall = time.Since(start)
	return res, nil
}

// cmd runs one command, appending its output to the build log.
func (b *plainBuild) cmd(ctx context.Context, name string, args ...string) error {
	f, err := os.OpenFile(filepath.Join(b.dir, "build.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	fmt.Fprintf(f, "+ %s %s\n", name, strings.Join(args, " "))
	c := exec.CommandContext(ctx, name, args...)
	c.Stdout, c.Stderr = f, f
	c.WaitDelay = 10 * time.Second
	if err := c.Run(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// manifestPins returns the pinned packages of the manifest our build wrote
// into rootfs, as apt-get install arguments (name=version).
func manifestPins(rootfs string) ([]string, error) {
	name := filepath.Join(rootfs, "etc/gpuhost/manifest.json")
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("reading our build's manifest: %w", err)
	}
	var m struct {
		Pins struct {
			Packages []struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			} `json:"packages"`
		} `json:"pins"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("parsing %s: %w", name, err)
	}
	var out []string
	for _, p := range m.Pins.Packages {
		spec := p.Name
		if p.Version != "" {
			spec += "=" + p.Version
		}
		out = append(out, spec)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s pins no packages", name)
	}
	return out, nil
}
