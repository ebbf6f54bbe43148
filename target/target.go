// Package target opens what a scan reads (a rootfs tree, a disk image, the
// live host), runs the fact collectors over it and assembles one
// gpuhost.facts/v1 document. Each domain's collect functions and checks are
// in one folder under facts/, named for what it describes: osinfo (release, kernel, systemd, cgroup), packages (dpkg, SBOM,
// baked manifest), encryption, network (listeners, firewall), tls
// (OpenSSL and nginx configuration, the TLS probe), ssh, runtime
// (containerd, docker, CDI, seeded images, kubelet), gpu, audit, access
// and secureboot (the boot chain's signatures, the firmware's Secure Boot
// state, lockdown). Package domains makes each collect function a
// collector of the document, with the collectors whose facts it reads
// (collector.Collector.Needs), and they run in that order.
//
// Every collector reads through env.FS, including /proc and /sys on a live
// host, so that a test can fake a host with a directory tree and so that an
// untrusted rootfs can never lead a read outside itself. Source fields in
// the facts use root-relative paths ("/etc/default/grub") so that an image
// and the host booted from it report the same names; error messages use
// env.FS.Display so that the user can find the file.
package target

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/target/collector"
	"github.com/gpuhost/gpuhost/target/diskimage"
	"github.com/gpuhost/gpuhost/target/domains"
)

// All returns every collector, in run order: each after the collectors it
// needs (collector.Order).
func All() []collector.Collector {
	ordered, err := collector.Order(domains.Collectors())
	if err != nil {
		// The set is fixed at build time, and TestAllIsOrdered orders it.
		panic(err)
	}
	return ordered
}

// Options tunes a collection.
type Options struct {
	Log              *slog.Logger
	ProbeTimeout     time.Duration
	ProbeConcurrency int
	// Collectors replaces All(): the scan commands add the vulnerabilities
	// collector, tests run a few. Collect runs them in collector.Order.
	Collectors []collector.Collector
	// Now stamps target.scanned_at; time.Now when zero.
	Now time.Time
	// Image says how Image opens a disk image: the backing files it may
	// use, the root partition, the limits.
	Image diskimage.Options
	// Budget bounds the whole collection; limits it leaves zero are
	// collect.DefaultBudget's.
	Budget collect.Budget
	// ImageRootfs is the rootfs tree a disk image's encrypted root was
	// made from (the gpuhost-rootfs builder keeps it beside the disk).
	// Image reads the root's files from it, and the partitions, the LUKS
	// header among them, from the disk. Only for a root inside a LUKS
	// volume: with a readable root, Image refuses it.
	ImageRootfs string
}

// Rootfs collects facts from an unpacked image tree.
func Rootfs(ctx context.Context, dir string, o Options) (*facts.Facts, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("opening rootfs: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("opening rootfs %s: not a directory", dir)
	}
	fsys, closer, err := sysroot.Open(dir)
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	return Collect(ctx, &collect.Env{FS: fsys}, facts.KindRootfs, fsys.Root(), o), nil
}

// Host collects facts from the running host, reading it through "/" (or
// through hostRoot, as a DaemonSet that mounts the host at /host does).
func Host(ctx context.Context, hostRoot string, o Options) (*facts.Facts, error) {
	if hostRoot == "" {
		hostRoot = "/"
	}
	fsys, closer, err := sysroot.Open(hostRoot)
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	ref, _ := os.Hostname()
	return Collect(ctx, &collect.Env{FS: fsys, Live: true}, facts.KindHost, ref, o), nil
}

// Collect runs collectors over env. It always returns a document: a collector
// that fails or panics is recorded as an error, and the checks that need it
// become errors too, so nothing it would have shown can pass.
func Collect(ctx context.Context, env *collect.Env, kind, ref string, o Options) *facts.Facts {
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	env.Log = o.Log
	if env.Log == nil {
		env.Log = slog.New(slog.DiscardHandler)
	}
	env.ProbeTimeout, env.ProbeConcurrency = o.ProbeTimeout, o.ProbeConcurrency
	if env.ProbeTimeout == 0 {
		env.ProbeTimeout = 2 * time.Second
	}
	if env.ProbeConcurrency == 0 {
		env.ProbeConcurrency = 16
	}
	cs := o.Collectors
	if cs == nil {
		cs = All()
	}
	env.Budget = o.Budget.WithDefaults()
	ctx, cancel := context.WithTimeout(ctx, env.Budget.Deadline)
	defer cancel()
	f := facts.New(kind, ref, now)
	// An ordering error is recorded against every collector, which is all a
	// caller needs: the checks that need them error.
	_ = collector.Run(ctx, env, f, cs)
	return f
}
