package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"math/rand/v2"
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

	"github.com/gpuhost/gpuhost/checks"
	"github.com/gpuhost/gpuhost/render/report"
	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan"
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
// (checks.Image, the engine, the exit code of --fail-on high): a process
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
	f, err := checks.Image(ctx, file, checks.Options{})
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

// mutateImages writes n damaged copies of the bases into dir.
func mutateImages(bases []soakBase, dir string, n int) ([]mutation, error) {
	rng := rand.New(rand.NewPCG(15, 1000))
	data := make([][]byte, len(bases))
	for i, b := range bases {
		d, err := os.ReadFile(b.file)
		if err != nil {
			return nil, err
		}
		data[i] = d
	}
	// The sound images come first: each must give exit 1 (the sample tree
	// is weak), or the damaged ones would prove nothing.
	var out []mutation
	for _, b := range bases {
		out = append(out, mutation{File: b.file, What: "sound: " + b.name})
	}
	for i := range n {
		bi := i % len(bases)
		b := bases[bi]
		img, what, damaged := mutate(rng, b, slices.Clone(data[bi]), dir)
		file := filepath.Join(dir, fmt.Sprintf("m%04d-%s.%s", i, b.name, b.format))
		if err := os.WriteFile(file, img, 0o644); err != nil {
			return nil, err
		}
		out = append(out, mutation{File: file, What: what, Damaged: damaged})
	}
	return out, nil
}

// mutate damages img, a copy of base b, and says how and whether the
// damage is one the scanner must refuse.
func mutate(rng *rand.Rand, b soakBase, img []byte, dir string) ([]byte, string, bool) {
	if rng.IntN(8) == 0 {
		n := 1 + rng.IntN(16)
		off := rng.IntN(len(img) - n)
		for i := range n {
			img[off+i] = byte(rng.UintN(256))
		}
		return img, fmt.Sprintf("random bytes: %d at %d", n, off), false
	}
	if b.format == "qcow2" {
		if rng.IntN(3) > 0 {
			return mutateQcow2(rng, img, dir)
		}
		// The filesystem and table lie under the qcow2 mapping; damage
		// them through it, where a cluster is stored uncompressed.
		q := qcowOf(img)
		if what, damaged := mutateDisk(rng, b, q.guest(img)); what != "" {
			return img, what, damaged
		}
		return mutateQcow2(rng, img, dir)
	}
	what, damaged := mutateDisk(rng, b, func(off int64, n int) []byte { return img[off : off+int64(n)] })
	return img, what, damaged
}

var be = binary.BigEndian

// qcowInfo is what the mutations need of a qcow2 header.
type qcowInfo struct {
	cs                         int64
	l1, refTable, l1Size, size int64
	ext                        bool
}

func qcowOf(img []byte) qcowInfo {
	cb := be.Uint32(img[20:])
	return qcowInfo{cs: 1 << cb, l1: int64(be.Uint64(img[40:])), refTable: int64(be.Uint64(img[48:])),
		l1Size: int64(be.Uint32(img[36:])), size: int64(len(img)), ext: be.Uint64(img[72:])&(1<<4) != 0}
}

// l2Entries lists the offsets in img of every L2 entry, and of those that
// map an uncompressed host cluster.
func (q qcowInfo) l2Entries(img []byte) (all, allocated []int64) {
	step := int64(8)
	if q.ext {
		step = 16
	}
	for i := range q.l1Size {
		l2 := int64(be.Uint64(img[q.l1+8*i:]) & 0x00fffffffffffe00)
		if l2 == 0 {
			continue
		}
		for e := l2; e < l2+q.cs; e += step {
			all = append(all, e)
			if v := be.Uint64(img[e:]); v&(1<<62) == 0 && v&0x00fffffffffffe00 != 0 {
				allocated = append(allocated, e)
			}
		}
	}
	return all, allocated
}

func mutateQcow2(rng *rand.Rand, img []byte, dir string) ([]byte, string, bool) {
	q := qcowOf(img)
	put32 := func(off int, v uint32) { be.PutUint32(img[off:], v) }
	put64 := func(off int, v uint64) { be.PutUint64(img[off:], v) }
	past := uint64(q.size+q.cs) &^ uint64(q.cs-1)
	all, allocated := q.l2Entries(img)
	switch rng.IntN(6) {
	case 0: // a header field out of its bounds
		fields := []func() string{
			func() string { put32(4, []uint32{0, 1, 4, 0xffffffff}[rng.IntN(4)]); return "version" },
			func() string { put32(20, []uint32{0, 8, 22, 28, 63}[rng.IntN(5)]); return "cluster_bits" },
			func() string { put32(36, 4194305+rng.Uint32N(1<<31)); return "l1_size" },
			func() string { put64(40, uint64(q.l1)+8); return "l1_table_offset unaligned" },
			func() string { put64(40, past); return "l1_table_offset past the end" },
			func() string { put64(48, uint64(q.refTable)+512); return "refcount_table_offset unaligned" },
			func() string { put32(56, 0); return "refcount_table_clusters 0" },
			func() string { put32(56, 1<<24); return "refcount_table_clusters huge" },
			func() string { put32(60, 65537+rng.Uint32N(1<<20)); return "nb_snapshots" },
			func() string { put32(60, 1000); put64(64, past); return "snapshots past the end" },
			func() string { put64(72, 1<<(5+rng.IntN(59))); return "unknown incompatible bit" },
			func() string { put64(72, 2); return "corrupt bit" },
			func() string { put64(72, 4); return "external data file bit" },
			func() string { put32(96, 7+rng.Uint32N(100)); return "refcount_order" },
			func() string {
				put32(100, []uint32{0, 72, 100, 108, uint32(q.cs) + 8}[rng.IntN(5)])
				return "header_length"
			},
			func() string { put32(32, 1+rng.Uint32N(2)); return "crypt_method" },
			func() string {
				put64(24, uint64(q.l1Size)*uint64(q.cs/8)*uint64(q.cs)+1+rng.Uint64N(1<<40))
				return "size past the L1 table"
			},
		}
		return img, "qcow2 header: " + fields[rng.IntN(len(fields))](), true
	case 1: // a backing file naming the canary
		name := []string{filepath.Join(dir, "canary.raw"), "canary.raw", "../" + filepath.Base(dir) + "/canary.raw"}[rng.IntN(3)]
		at := 1024
		copy(img[at:], name)
		put64(8, uint64(at))
		put32(16, uint32(len(name)))
		// The header extensions end before the name.
		return img, "qcow2 backing file: " + name, true
	case 2: // an L1 entry, never to 0, which leaves the range unallocated
		i := q.l1 + 8*rng.Int64N(max(q.l1Size, 1))
		v := []uint64{past, 1<<63 | past, 1<<63 | uint64(q.refTable), 1<<63 | uint64(q.l1), be.Uint64(img[i:]) + 512, be.Uint64(img[i:]) | 1<<56}[rng.IntN(6)]
		put64(int(i), v)
		return img, fmt.Sprintf("qcow2 L1 entry: 0x%x", v), true
	case 3: // an L2 entry
		if len(all) == 0 {
			return mutateQcow2(rng, img, dir)
		}
		e := all[rng.IntN(len(all))]
		choices := []uint64{1<<63 | past, 1<<63 | uint64(q.l1), 1<<63 | uint64(q.refTable), 1 << 63, 1<<62 | past<<1}
		if len(allocated) > 0 {
			other := be.Uint64(img[allocated[rng.IntN(len(allocated))]:]) & 0x00fffffffffffe00
			if other != be.Uint64(img[e:])&0x00fffffffffffe00 {
				choices = append(choices, 1<<63|other, 1<<63|other+512)
			}
		}
		v := choices[rng.IntN(len(choices))]
		put64(int(e), v)
		return img, fmt.Sprintf("qcow2 L2 entry: 0x%x", v), true
	case 4: // a refcount of an allocated cluster set to 0
		if len(allocated) == 0 {
			return mutateQcow2(rng, img, dir)
		}
		host := int64(be.Uint64(img[allocated[rng.IntN(len(allocated))]:]) & 0x00fffffffffffe00)
		order := be.Uint32(img[96:])
		if order != 4 {
			return mutateQcow2(rng, img, dir)
		}
		block := int64(be.Uint64(img[q.refTable:]))
		if at := block + 2*(host/q.cs); at+2 <= min(block+q.cs, q.size) {
			img[at], img[at+1] = 0, 0
			return img, "qcow2 refcount: 0 for a data cluster", true
		}
		return mutateQcow2(rng, img, dir)
	default: // the file cut short by at least a cluster past its last full one
		n := (len(img) % int(q.cs)) + int(q.cs)*(1+rng.IntN(3))
		return img[:len(img)-n], fmt.Sprintf("qcow2 truncated: %d bytes cut", n), true
	}
}

// guest returns a view of the guest disk of a qcow2 for writing: the host
// bytes of n bytes at a guest offset, nil where they are not stored in one
// uncompressed cluster.
func (q qcowInfo) guest(img []byte) func(off int64, n int) []byte {
	l2n, step := q.cs/8, int64(8)
	if q.ext {
		l2n, step = q.cs/16, 16
	}
	host := func(guest int64) int64 {
		vc := guest / q.cs
		if vc/l2n >= q.l1Size {
			return -1
		}
		l2 := int64(be.Uint64(img[q.l1+8*(vc/l2n):]) & 0x00fffffffffffe00)
		if l2 == 0 {
			return -1
		}
		e := be.Uint64(img[l2+step*(vc%l2n):])
		if e&(1<<62) != 0 || e&0x00fffffffffffe00 == 0 {
			return -1
		}
		return int64(e&0x00fffffffffffe00) + guest%q.cs
	}
	return func(off int64, n int) []byte {
		h := host(off)
		if h < 0 || host(off+int64(n)-1) != h+int64(n)-1 || h+int64(n) > int64(len(img)) {
			return nil
		}
		return img[h : h+int64(n)]
	}
}

// mutateDisk damages the partition table or the ext4 filesystem of a disk
// whose bytes at gives; "" when they are not where it can write them.
func mutateDisk(rng *rand.Rand, b soakBase, at func(off int64, n int) []byte) (string, bool) {
	if b.gpt && rng.IntN(2) == 0 {
		return mutateGPT(rng, at)
	}
	return mutateExt4(rng, at, b.fsAt)
}

// mutateGPT damages the GPT header or its first entry, with the checksums
// made right again, so that the damage is what the check must see.
func mutateGPT(rng *rand.Rand, at func(int64, int) []byte) (string, bool) {
	h, array := at(512, 512), at(1024, 128*128)
	if h == nil || array == nil {
		return "", false
	}
	le := binary.LittleEndian
	var what string
	switch rng.IntN(8) {
	case 0:
		le.PutUint32(h[80:], 4097+rng.Uint32N(1<<31))
		what = "GPT entry count"
	case 1:
		le.PutUint32(h[84:], []uint32{0, 64, 127, 129, 1 << 20}[rng.IntN(5)])
		what = "GPT entry size"
	case 2:
		le.PutUint64(h[48:], le.Uint64(h[32:])+1+rng.Uint64N(1<<20))
		what = "GPT last usable past the disk"
	case 3:
		le.PutUint64(h[72:], []uint64{0, 1, le.Uint64(h[40:])}[rng.IntN(3)])
		what = "GPT entry array location"
	case 4:
		le.PutUint64(array[40:], le.Uint64(h[48:])+1+rng.Uint64N(1<<20))
		what = "GPT partition end past the usable sectors"
	case 5:
		le.PutUint64(array[32:], rng.Uint64N(le.Uint64(h[40:])))
		what = "GPT partition start before the usable sectors"
	case 6:
		// A second partition over the first.
		copy(array[128:], array[:128])
		array[128+16]++
		what = "GPT overlapping partitions"
	default:
		h[16]++
		return "GPT header checksum", true
	}
	le.PutUint32(h[88:], crc32.ChecksumIEEE(array))
	clear(h[16:20])
	le.PutUint32(h[16:], crc32.ChecksumIEEE(h[:92]))
	return what, true
}

// mutateExt4 damages a superblock field or the root inode of the
// filesystem at fsAt.
func mutateExt4(rng *rand.Rand, at func(int64, int) []byte, fsAt int64) (string, bool) {
	sb := at(fsAt+1024, 1024)
	if sb == nil {
		return "", false
	}
	le := binary.LittleEndian
	bs := int64(1024) << le.Uint32(sb[0x18:])
	switch rng.IntN(10) {
	case 0:
		le.PutUint32(sb[0x18:], 7+rng.Uint32N(20))
		return "ext4 superblock: block size", true
	case 1:
		le.PutUint32(sb[0x20:], []uint32{0, 7, uint32(8*bs) + 1}[rng.IntN(3)])
		return "ext4 superblock: blocks per group", true
	case 2:
		le.PutUint32(sb[0x28:], uint32(8*bs)+1+rng.Uint32N(1000))
		return "ext4 superblock: inodes per group", true
	case 3:
		le.PutUint16(sb[0x58:], []uint16{0, 100, 129, 384, uint16(min(2*bs, 65535))}[rng.IntN(5)])
		return "ext4 superblock: inode size", true
	case 4:
		le.PutUint32(sb[0x4c:], 2+rng.Uint32N(100))
		return "ext4 superblock: revision", true
	case 5:
		le.PutUint32(sb[0x0:], le.Uint32(sb[0x0:])+1+rng.Uint32N(1000))
		return "ext4 superblock: inodes count", true
	case 6:
		le.PutUint32(sb[0x4:], le.Uint32(sb[0x4:])*2+rng.Uint32N(1000))
		return "ext4 superblock: blocks past the device", true
	case 7:
		le.PutUint32(sb[0x60:], le.Uint32(sb[0x60:])|[]uint32{0x1, 0x4, 0x8, 0x1000, 1 << 20}[rng.IntN(5)])
		return "ext4 superblock: incompatible feature", true
	case 8:
		le.PutUint32(sb[0x14:], le.Uint32(sb[0x4:])+rng.Uint32N(10))
		return "ext4 superblock: first data block", true
	default:
		// The root inode: inode 2 of group 0's inode table.
		gd := at(fsAt+(int64(le.Uint32(sb[0x14:]))+1)*bs, 64)
		if gd == nil {
			return "", false
		}
		table := int64(le.Uint32(gd[8:]))
		ino := at(fsAt+table*bs+int64(le.Uint16(sb[0x58:])), 2)
		if ino == nil {
			return "", false
		}
		le.PutUint16(ino, []uint16{0x8000, 0xa000, 0x1000, 0}[rng.IntN(4)]|0o644)
		return "ext4 root inode: not a directory", true
	}
}
