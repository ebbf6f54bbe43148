package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/diskfs/go-diskfs"
	"github.com/diskfs/go-diskfs/partition/gpt"

	"github.com/gpuhost/gpuhost/render/report"
	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan"
	"github.com/gpuhost/gpuhost/target"
)

// The image soak: mutated disk images, each damaging one structure the
// scanner checks (a qcow2 header field, an L1 or L2 entry, a refcount, a
// GPT field or entry, an ext4 superblock field or the root inode), or a
// few random bytes anywhere, go through the scan image pipeline. Every one
// must end with exit 1 or 2, a damaged one with 2; all of them within
// soakBudget; the process under soakRSS; and no file but the images may
// be opened: each image's directory holds a canary, which backing-file
// mutations name, and strace lists what the process opened.
//
// The scans run in process, in a worker that prepares the policy engine
// once and then does for each image what `gpuhost scan image` does
// (target.Image, the engine, the exit code of --fail-on high): a process
// per image spends most of its time compiling the pack again.

const (
	soakImages = 1000
	soakBudget = 20 * time.Second
	soakRSS    = 512 << 20
)

// mutation is one damaged image and what it must give.
type mutation struct {
	File    string `json:"file"`
	What    string `json:"what"`
	Damaged bool   `json:"damaged"`
}

// soakResult is one image's outcome, as the worker reports it.
type soakResult struct {
	File  string        `json:"file"`
	Exit  int           `json:"exit"`
	Took  time.Duration `json:"took"`
	Error string        `json:"error,omitempty"`
}

// soakWorkerFlag runs this binary as the worker over a list of images.
const soakWorkerFlag = "soak-worker"

func measureImageSoak(sample, tmp string) error {
	strace, err := exec.LookPath("strace")
	if err != nil {
		return errors.New("the image soak lists opened files with strace, which is not installed (make bench installs it)")
	}
	dir := filepath.Join(tmp, "soak")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	canary := filepath.Join(dir, "canary.raw")
	if err := os.WriteFile(canary, bytes.Repeat([]byte("host secret\n"), 1<<16), 0o644); err != nil {
		return err
	}
	bases, err := soakBases(sample, dir)
	if err != nil {
		return err
	}
	muts, err := mutateImages(bases, dir, soakImages)
	if err != nil {
		return err
	}
	list := filepath.Join(tmp, "soak-list.json")
	data, err := json.Marshal(muts)
	if err != nil {
		return err
	}
	if err := os.WriteFile(list, data, 0o644); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	trace := filepath.Join(tmp, "soak.strace")
	cmd := exec.Command(strace, "-f", "-qq", "--seccomp-bpf", "-y", "-e", "trace=open,openat,openat2,creat", "-o", trace,
		self, "-"+soakWorkerFlag, list)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("the soak worker: %w\n%s", err, errb.String())
	}
	wall := time.Since(start)
	var results []soakResult
	var rss int64
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if v, ok := bytes.CutPrefix(line, []byte("VmHWM ")); ok {
			fmt.Sscan(string(v), &rss)
			continue
		}
		var r soakResult
		if err := json.Unmarshal(line, &r); err != nil {
			return fmt.Errorf("the soak worker wrote %q: %w", line, err)
		}
		results = append(results, r)
	}
	return reportSoak(muts, results, wall, rss, trace, dir, canary, list)
}

func reportSoak(muts []mutation, results []soakResult, wall time.Duration, rss int64, trace, dir, canary, list string) error {
	byFile := map[string]soakResult{}
	var total, slowest time.Duration
	var slowestFile string
	for _, r := range results {
		byFile[r.File] = r
		total += r.Took
		if r.Took > slowest {
			slowest, slowestFile = r.Took, r.File
		}
	}
	var problems []string
	exits := map[int]int{}
	kinds := map[string][2]int{}  // damaged mutations per kind: images, exit 2
	sample := map[string]string{} // an error per kind, to show what refused it
	for _, m := range muts {
		r, ok := byFile[m.File]
		if !ok {
			problems = append(problems, m.File+": no result")
			continue
		}
		exits[r.Exit]++
		kind, _, _ := strings.Cut(m.What, ":")
		k := kinds[kind]
		k[0]++
		if r.Exit == 2 {
			k[1]++
			if sample[kind] == "" {
				sample[kind] = r.Error
			}
		}
		kinds[kind] = k
		switch {
		case strings.HasPrefix(m.What, "sound") && r.Exit != 1:
			problems = append(problems, fmt.Sprintf("%s (%s): exit %d, want the sample tree's 1 (%s)", filepath.Base(m.File), m.What, r.Exit, r.Error))
		case r.Exit != 1 && r.Exit != 2:
			problems = append(problems, fmt.Sprintf("%s (%s): exit %d, want 1 or 2", filepath.Base(m.File), m.What, r.Exit))
		case m.Damaged && r.Exit != 2:
			problems = append(problems, fmt.Sprintf("%s (%s): a damaged image gave exit %d", filepath.Base(m.File), m.What, r.Exit))
		}
	}
	opened, err := openedFiles(trace)
	if err != nil {
		return err
	}
	images := map[string]bool{}
	for _, m := range muts {
		images[m.File] = true
	}
	var outside []string
	for _, p := range opened {
		switch {
		case p == canary || strings.Contains(p, "canary"):
			problems = append(problems, "the canary was opened: "+p)
		case strings.HasPrefix(p, dir+"/") && !images[p]:
			problems = append(problems, "a file beside the images was opened: "+p)
		case !strings.HasPrefix(p, dir+"/") && !processFile(p) && p != list:
			outside = append(outside, p)
		}
	}
	for _, p := range outside {
		problems = append(problems, "a file outside the images was opened: "+p)
	}
	fmt.Printf("image soak: %d mutated images through the scan image pipeline in process (see tools/bench/soak.go)\n", len(muts))
	fmt.Printf("  wall %s for all (the worker's start and the policy engine's compile included; target %s); scans summed %s, slowest %s (%s)\n",
		wall.Round(time.Millisecond), soakBudget, total.Round(time.Millisecond), slowest.Round(time.Millisecond), filepath.Base(slowestFile))
	fmt.Printf("  peak RSS %.1f MiB (target %d MiB)\n", float64(rss)/(1<<20), soakRSS>>20)
	fmt.Printf("  exits: %v\n", exits)
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		msg := sample[k]
		if i := strings.Index(msg, ": "); i >= 0 && strings.HasPrefix(msg, "reading image ") {
			msg = msg[i+2:]
		}
		if len(msg) > 110 {
			msg = msg[:110] + "..."
		}
		fmt.Printf("  %-46s %4d images, %4d exit 2  %s\n", k, kinds[k][0], kinds[k][1], msg)
	}
	var own []string
	for _, p := range opened {
		if !strings.HasPrefix(p, dir+"/") {
			own = append(own, p)
		}
	}
	fmt.Printf("  files opened (strace -f, open/openat/openat2/creat): %d distinct, %d of them in the images' directory, which holds %d images and the canary\n", len(opened), len(opened)-len(own), len(images))
	fmt.Printf("  the rest, the process's own: %s\n", strings.Join(own, " "))
	if wall > soakBudget {
		problems = append(problems, fmt.Sprintf("took %s, over %s", wall, soakBudget))
	}
	if rss > soakRSS {
		problems = append(problems, fmt.Sprintf("peak RSS %d bytes, over %d", rss, soakRSS))
	}
	if len(problems) > 0 {
		return fmt.Errorf("image soak: %d problems:\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
	return nil
}

// processFile is what any process of this program opens for itself: the
// dynamic loader's cache and libc (cgo), the kernel's memory settings, its
// own executable and /proc entries.
func processFile(p string) bool {
	for _, prefix := range []string{"/proc/", "/sys/kernel/mm/", "/sys/fs/cgroup/", "/dev/null", "/dev/urandom", "/etc/localtime", "/usr/share/zoneinfo/",
		"/etc/ld.so.cache", "/lib/x86_64-linux-gnu/", "/lib/aarch64-linux-gnu/", "/usr/lib/x86_64-linux-gnu/", "/usr/lib/aarch64-linux-gnu/"} {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	self, _ := os.Executable()
	return p == self
}

// straceOpen matches an open in the trace, with -y's path of the
// directory descriptor it is relative to.
var straceOpen = regexp.MustCompile(`^\d+\s+(?:open|openat|openat2|creat)\((?:(?:AT_FDCWD|-?\d+)(?:<([^>]*)>)?, )?"((?:[^"\\]|\\.)*)"`)

// openedFiles lists the paths the trace shows opened, tried or done,
// resolving names relative to a directory descriptor.
func openedFiles(trace string) ([]string, error) {
	f, err := os.Open(trace)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		m := straceOpen.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		p := m[2]
		if !filepath.IsAbs(p) {
			p = filepath.Join(m[1], p)
		}
		seen[filepath.Clean(p)] = true
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(seen))
	for p := range seen {
		out = append(out, p)
	}
	sort.Strings(out)
	return out, nil
}

// soakWorker scans each image of the list and writes one JSON result a
// line, then its peak RSS.
func soakWorker(list string) error {
	data, err := os.ReadFile(list)
	if err != nil {
		return err
	}
	var muts []mutation
	if err := json.Unmarshal(data, &muts); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*soakBudget)
	defer cancel()
	e, err := scan.Pack{}.Engine(ctx)
	if err != nil {
		return err
	}
	sc := scan.New(e)
	render, err := report.Lookup("json")
	if err != nil {
		return err
	}
	results := make([]soakResult, len(muts))
	var wg sync.WaitGroup
	next := make(chan int)
	for range 2 {
		wg.Go(func() {
			for i := range next {
				results[i] = scanOne(ctx, sc, render, muts[i].File)
			}
		})
	}
	for i := range muts {
		next <- i
	}
	close(next)
	wg.Wait()
	enc := json.NewEncoder(os.Stdout)
	for _, r := range results {
		enc.Encode(r)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	for line := range strings.Lines(string(status)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			fmt.Printf("VmHWM %d\n", kb<<10)
		}
	}
	return nil
}

// scanOne does what `gpuhost scan image FILE --format json` does.
func scanOne(ctx context.Context, sc *scan.Scanner, render report.Renderer, file string) soakResult {
	start := time.Now()
	r := soakResult{File: file}
	f, err := target.Image(ctx, file, target.Options{})
	if err == nil {
		var rep *reports.Report
		if rep, err = sc.Facts(ctx, f); err == nil {
			r.Exit = scan.ExitCode([]*reports.Report{rep}, scan.Thresholds{FailOn: "high"})
			render.Render(io.Discard, rep)
		}
	}
	if err != nil {
		r.Exit, r.Error = scan.ExitUntrusted, err.Error()
	}
	r.Took = time.Since(start)
	return r
}

// soakBase is a sound image the mutations start from.
type soakBase struct {
	name, file, format string
	// fsAt is where the ext4 filesystem starts in the virtual disk.
	fsAt int64
	gpt  bool
}

// soakBases makes the sound images: the sample tree as ext4 on a whole
// raw disk and in a GPT partition, and as qcow2 plain, compressed and with
// extended L2 entries.
func soakBases(sample, dir string) ([]soakBase, error) {
	raw := filepath.Join(dir, "base.raw")
	if out, err := exec.Command("mkfs.ext4", "-q", "-d", sample, raw, "8M").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("mkfs.ext4: %v\n%s", err, out)
	}
	gptRaw := filepath.Join(dir, "base-gpt.raw")
	if err := gptOf(raw, gptRaw); err != nil {
		return nil, err
	}
	bases := []soakBase{{name: "raw", file: raw, format: "raw"}, {name: "gpt", file: gptRaw, format: "raw", fsAt: 2048 * 512, gpt: true}}
	for _, q := range []struct {
		name, from string
		opts       []string
	}{
		{"qcow2", raw, nil},
		{"qcow2-zlib", raw, []string{"-c", "-o", "cluster_size=4k"}},
		{"qcow2-extl2", raw, []string{"-o", "extended_l2=on,cluster_size=32k"}},
		{"qcow2-gpt", gptRaw, []string{"-c"}},
	} {
		out := filepath.Join(dir, "base-"+q.name+".qcow2")
		args := append(append([]string{"convert", "-O", "qcow2"}, q.opts...), q.from, out)
		if b, err := exec.Command("qemu-img", args...).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("qemu-img %v: %v\n%s", args, err, b)
		}
		b := soakBase{name: q.name, file: out, format: "qcow2"}
		if q.from == gptRaw {
			b.fsAt, b.gpt = 2048*512, true
		}
		bases = append(bases, b)
	}
	return bases, nil
}

// gptOf writes a GPT disk holding the filesystem raw in partition 1.
func gptOf(raw, out string) error {
	st, err := os.Stat(raw)
	if err != nil {
		return err
	}
	d, err := diskfs.Create(out, st.Size()+4096*512, diskfs.SectorSizeDefault)
	if err != nil {
		return err
	}
	defer d.Close()
	table := &gpt.Table{LogicalSectorSize: 512, PhysicalSectorSize: 512, ProtectiveMBR: true, Partitions: []*gpt.Partition{
		{Index: 1, Start: 2048, End: 2048 + uint64(st.Size()/512) - 1, Type: gpt.LinuxFilesystem, Name: "root"},
	}}
	if err := d.Partition(table); err != nil {
		return err
	}
	f, err := os.Open(raw)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = d.WritePartitionContents(1, f)
	return err
}
