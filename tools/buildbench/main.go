// Command buildbench measures the image builder as a whole: a cold `packer
// build` of the Debian 12 template with an empty apt cache, a warm rebuild
// with the cache that build filled (a template that derives its
// bootstrap_cache_dir from apt_cache_dir also reuses the bootstrapped tree
// the cold build cached; the report says whether it did), and, in the same run, the plain way of
// making the same rootfs (mmdebstrap, then apt-get in a chroot, then the same
// ext4 and qcow2 packing) with its own empty cache. It prints the wall times,
// the two ratios against their targets and the builder's step timings.
//
// `make bench` runs it as root; it needs mmdebstrap, qemu-img, mkfs.ext4,
// unshare and the Debian mirror of this machine's apt sources.
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Targets from the issue: our build at most 1.15x the plain one, and a warm
// rebuild at most 0.6x a cold one.
const (
	targetOverhead = 1.15
	targetWarm     = 0.6
)

// options are the command line.
type options struct {
	packer, plugin       string
	template, varFile    string
	work                 string
	keep                 bool
	include, components  string
	installExtra         string
	imageSize            string
	vars                 []string
	rounds               int
	timeout              time.Duration
	failOnMissedTarget   bool
	overheadMax, warmMax float64
}

func main() {
	var o options
	flag.StringVar(&o.packer, "packer", "bin/packer", "the Packer binary")
	flag.StringVar(&o.plugin, "plugin", "bin/packer-plugin-gpuhost", "the gpuhost plugin binary, installed offline into a private plugin directory")
	flag.StringVar(&o.template, "template", "images/debian-12-gpu.pkr.hcl", "the template our build bakes")
	flag.StringVar(&o.varFile, "var-file", "images/pins-debian-12.pkrvars.hcl", "the template's variable file (pins-<family>.pkrvars.hcl)")
	flag.Func("var", "a template variable as name=value, passed to packer build as -var (repeatable; the Debian template needs trivy_db)", func(v string) error {
		if !strings.Contains(v, "=") {
			return fmt.Errorf("%q is not name=value", v)
		}
		o.vars = append(o.vars, v)
		return nil
	})
	flag.StringVar(&o.work, "work", "", "work directory (default: a new one under /var/tmp, removed at the end)")
	flag.BoolVar(&o.keep, "keep", false, "keep the work directory: build logs, rootfs trees and images")
	// The template's extra_packages, then what its disk output installs
	// besides: the pinned kernel (pins-debian-12.pkrvars.hcl) and GRUB's images.
	flag.StringVar(&o.include, "include", "systemd,systemd-sysv,udev,ca-certificates,nftables,openssh-server,sudo,libpam-google-authenticator,auditd,linux-image-6.1.0-50-amd64=6.1.176-1,grub-efi-amd64-bin,grub-pc-bin", "the packages the template's bootstrap installs (extra_packages, kernel_package and GRUB), which the plain build passes to mmdebstrap --include")
	flag.StringVar(&o.components, "components", "main,contrib,non-free,non-free-firmware", "the template's components")
	flag.StringVar(&o.installExtra, "install", "containerd", "packages the plain build installs with apt-get besides the pins our image's manifest lists")
	flag.StringVar(&o.imageSize, "image-size", "3G", "the template's image_size, for the plain build's ext4 image")
	flag.IntVar(&o.rounds, "rounds", 2, "cold builds of ours and of the plain baseline, alternating; the fastest of each counts")
	flag.DurationVar(&o.timeout, "timeout", 30*time.Minute, "limit on each build")
	flag.BoolVar(&o.failOnMissedTarget, "strict", false, "exit 1 when a ratio misses its target")
	flag.Float64Var(&o.overheadMax, "target-overhead", targetOverhead, "the most our cold build may take, as a multiple of the plain one")
	flag.Float64Var(&o.warmMax, "target-warm", targetWarm, "the most a warm rebuild may take, as a multiple of a cold one")
	flag.Parse()
	missed, err := run(o, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "buildbench:", err)
		os.Exit(2)
	}
	if missed && o.failOnMissedTarget {
		os.Exit(1)
	}
}

// run does the three builds and prints the table; missed says whether a
// ratio missed its target.
func run(o options, w io.Writer) (missed bool, err error) {
	if os.Geteuid() != 0 {
		return false, fmt.Errorf("needs root: mmdebstrap --mode=root, chroot and mounts")
	}
	if o.rounds < 1 || o.rounds > 10 {
		return false, fmt.Errorf("-rounds must be 1 to 10, not %d", o.rounds)
	}
	for _, p := range []*string{&o.packer, &o.plugin, &o.template, &o.varFile} {
		abs, err := filepath.Abs(*p)
		if err != nil {
			return false, err
		}
		if _, err := os.Stat(abs); err != nil {
			return false, err
		}
		*p = abs
	}
	work := o.work
	if work == "" {
		if work, err = os.MkdirTemp("/var/tmp", "gpuhost-buildbench-"); err != nil {
			return false, err
		}
		if !o.keep {
			defer func() {
				if rerr := os.RemoveAll(work); rerr != nil && err == nil {
					err = rerr
				}
			}()
		}
	} else if err := os.MkdirAll(work, 0o755); err != nil {
		return false, err
	}
	fmt.Fprintf(w, "work directory: %s\n", work)

	p := &packerRun{packer: o.packer, plugin: o.plugin, template: o.template, varFile: o.varFile, vars: o.vars,
		pluginPath: filepath.Join(work, "plugins"), timeout: o.timeout}
	if err := p.install(); err != nil {
		return false, err
	}
	// Other work on the machine slows whichever build it overlaps, so the
	// cold builds run in rounds, ours and plain back to back and in
	// alternating order, and the ratios use the fastest of each: the run
	// least disturbed.
	var colds []*buildResult
	var plains []*plainResult
	var plain *plainBuild
	var cache, coldDir string
	for round := 1; round <= o.rounds; round++ {
		oursCold := func() error {
			cache = filepath.Join(work, fmt.Sprintf("apt-cache-%d", round))
			coldDir = filepath.Join(work, fmt.Sprintf("cold-%d", round))
			fmt.Fprintf(w, "== round %d, ours, cold: packer build with an empty apt cache\n", round)
			cold, err := p.build(coldDir, cache)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "   %s\n", cold.wall.Round(100*time.Millisecond))
			colds = append(colds, cold)
			if plain != nil {
				return nil
			}
			// The plain build takes the mirror and the pins from ours.
			pins, err := manifestPins(filepath.Join(coldDir, "rootfs"))
			if err != nil {
				return err
			}
			plain = &plainBuild{
				suite:      cold.suite,
				variant:    cold.variant,
				mirror:     cold.mirror,
				components: o.components,
				include:    o.include,
				install:    append(pins, strings.Fields(strings.ReplaceAll(o.installExtra, ",", " "))...),
				imageSize:  o.imageSize,
				timeout:    o.timeout,
			}
			return nil
		}
		plainCold := func() error {
			plain.dir = filepath.Join(work, fmt.Sprintf("plain-%d", round))
			fmt.Fprintf(w, "== round %d, plain, cold: mmdebstrap %s from the mirror ours used, then chroot apt-get install %s, then the same packing\n",
				round, plain.suite, strings.Join(plain.install, " "))
			base, err := plain.run()
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "   %s\n", base.wall.Round(100*time.Millisecond))
			plains = append(plains, base)
			return nil
		}
		order := []func() error{oursCold, plainCold}
		if round%2 == 0 {
			order = []func() error{plainCold, oursCold}
		}
		for _, f := range order {
			if err := f(); err != nil {
				return false, err
			}
		}
	}

	fmt.Fprintln(w, "== ours, warm: packer build again with the cache the last cold build filled")
	warm, err := p.build(filepath.Join(work, "warm"), cache)
	if err != nil {
		return false, err
	}
	fmt.Fprintf(w, "   %s\n", warm.wall.Round(100*time.Millisecond))
	cold := fastest(colds, func(r *buildResult) time.Duration { return r.wall })
	base := fastest(plains, func(r *plainResult) time.Duration { return r.wall })

	same, err := comparePackages(filepath.Join(coldDir, "rootfs"), filepath.Join(plain.dir, "rootfs"))
	if err != nil {
		return false, err
	}
	fmt.Fprintln(w)
	return printReport(w, o, cold, warm, base, same), nil
}

// fastest returns the run with the least wall time.
func fastest[T any](runs []T, wall func(T) time.Duration) T {
	best := runs[0]
	for _, r := range runs[1:] {
		if wall(r) < wall(best) {
			best = r
		}
	}
	return best
}
