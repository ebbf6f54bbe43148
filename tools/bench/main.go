// Command bench measures whole gpuhost commands the way an operator runs
// them, and Lynis on the same tree in the same run, so the figures sit side
// by side. `make bench` runs it; it is not part of `make test`.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/gpuhost/gpuhost/facts/packages"
)

func main() {
	gpuhost := flag.String("gpuhost", "bin/gpuhost", "the gpuhost binary to measure")
	agentBin := flag.String("agent", "bin/gpuhost-agent", "the lean build the agent figure runs (make build writes it)")
	sample := flag.String("sample", "cmd/gpuhost/testdata/rootfs-weak", "configuration files copied into the generated tree")
	hardened := flag.String("hardened", "cmd/gpuhost/testdata/rootfs-hardened", "the tree whose collection and judging are timed side by side")
	packages := flag.Int("packages", 1500, "packages in the generated dpkg status")
	files := flag.Int("files", 20000, "files in the generated tree")
	docs := flag.Int("docs", 10000, "facts documents for the scan facts figure")
	runs := flag.Int("runs", 10, "repetitions of each timed command")
	only := flag.String("only", "", `run one part only: "facts" (the scan facts figures), "rootfs" (facts and scan of the hardened tree side by side, scan rootfs of the generated tree, and Lynis), "agent" (one agent run and its idle memory), "soak-yaml" (mutated waiver and params files), "soak-images" (1,000 damaged disk images), "soak-hostile" (crafted attacks on the scan budget) or "boot" (the last boot test's figures, from -boot)`)
	bootDir := flag.String("boot", "", "a directory holding the boot test's recorded figures (make e2e keeps them in out/e2e): each boot's time from power on to its live verdict, reported beside the target, not measured again")
	soak := flag.Int("soak", 1000, "mutated files in the YAML soak")
	soakList := flag.String(soakWorkerFlag, "", "internal: scan the images listed in this file, as the image soak's worker")
	writeFleet := flag.String("write-fleet", "", "write the realistic fleet of -docs sample-image hosts (NDJSON) to this file, and the params to scan them with to FILE.params.yaml, and exit, for profiling with gpuhost --cpuprofile")
	flag.Parse()
	if *soakList != "" {
		if err := soakWorker(*soakList); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if *writeFleet != "" {
		if err := writeRealisticFleet(*gpuhost, *sample, *docs, *writeFleet); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if !slices.Contains([]string{"", "facts", "rootfs", "agent", "soak-yaml", "soak-images", "soak-hostile", "boot"}, *only) {
		fmt.Fprintf(os.Stderr, "bench: -only is facts, rootfs, agent, soak-yaml, soak-images, soak-hostile or boot, not %q\n", *only)
		os.Exit(2)
	}
	if *only == "" || *only == "boot" {
		if err := reportBoots(os.Stdout, *bootDir, *only == "boot"); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		if *only != "" {
			return
		}
	}
	if *only == "" || *only == "soak-yaml" {
		if err := soakYAML(*gpuhost, *sample, *soak); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		if *only != "" {
			return
		}
	}
	if err := run(*gpuhost, *agentBin, *sample, *hardened, *packages, *files, *docs, *runs, *only); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// measurement is one command's figures over several runs.
type measurement struct {
	name    string
	wall    []time.Duration
	cpu     []time.Duration // user + system
	maxRSS  int64           // KiB, the largest over the runs
	finding string
}

func (m measurement) median() time.Duration { return median(m.wall) }

// medianCPU is the CPU time the command used, which a loaded machine
// inflates far less than the wall time.
func (m measurement) medianCPU() time.Duration { return median(m.cpu) }

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

func run(gpuhost, agentBin, sample, hardened string, nPackages, nFiles, nDocs, runs int, only string) error {
	tmp, err := os.MkdirTemp("", "gpuhost-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	switch only {
	case "soak-images":
		return measureImageSoak(sample, tmp)
	case "soak-hostile":
		return measureHostileSoak(gpuhost, sample, tmp)
	}
	tree := filepath.Join(tmp, "rootfs")
	if only == "facts" || only == "agent" {
		// The facts figures read only the tree's dpkg status.
		nFiles = 0
	}
	if err := buildTree(tree, sample, nPackages, nFiles); err != nil {
		return fmt.Errorf("building the tree: %w", err)
	}
	fmt.Printf("tree: %s (dpkg status of %d packages, %d files)\n\n", tree, nPackages, nFiles)

	var table []measurement
	var judging string

	if only == "" || only == "rootfs" {
		ms, line, err := measureJudging(gpuhost, hardened, runs)
		if err != nil {
			return err
		}
		table, judging = append(table, ms...), line
		m, err := measureScanRootfs(gpuhost, tree, runs)
		if err != nil {
			return err
		}
		table = append(table, m)
	}
	if only == "" || only == "facts" {
		ms, err := measureFleets(gpuhost, sample, tree, nDocs, runs)
		if err != nil {
			return err
		}
		table = append(table, ms...)
	}
	if only == "" || only == "agent" {
		m, err := measureAgent(gpuhost, agentBin, tmp, min(runs, 3))
		if err != nil {
			return err
		}
		table = append(table, m)
	}
	if only == "" || only == "rootfs" {
		if err := measureLynis(tmp, tree, runs, &table); err != nil {
			return err
		}
	}

	var soakErr error
	if only == "" {
		soakErr = errors.Join(measureImageSoak(sample, tmp), measureHostileSoak(gpuhost, sample, tmp))
	}

	fmt.Printf("%-72s %12s %12s %12s  %s\n", "command", "median wall", "median CPU", "peak RSS", "what it found")
	for _, m := range table {
		fmt.Printf("%-72s %12s %12s %9.1f MB  %s\n", m.name, m.median().Round(time.Millisecond),
			m.medianCPU().Round(time.Millisecond), float64(m.maxRSS)/1024, m.finding)
	}
	fmt.Printf("\ntargets: scan rootfs < 300 ms and < 150 MB; scan facts and scan facts --summary >= 2000 documents/s; agent run < 1 s, idle RSS < 60 MB\n")
	if judging != "" {
		fmt.Println(judging)
	}
	fmt.Printf("the machine may be shared: CPU time and documents per CPU-second move far less with load than wall time\n")
	return soakErr
}

func measureScanRootfs(gpuhost, tree string, runs int) (measurement, error) {
	scanRootfs := measurement{name: "gpuhost scan rootfs"}
	var out []byte
	for range runs {
		res, err := timed("", true, gpuhost, "scan", "rootfs", tree, "--format", "json")
		if err != nil && exitCode(err) != 1 {
			return scanRootfs, fmt.Errorf("gpuhost scan rootfs: %w\n%s", err, res.stderr)
		}
		scanRootfs.add(res)
		out = res.stdout
	}
	scanRootfs.finding = summarizeReport(out)
	return scanRootfs, nil
}

// measureFleets times scan facts over fleets of saved documents. Two
// shapes of host: the sample image (a dozen packages) and the generated
// tree's full 1,500-package inventory, whose documents are 60 times larger.
// Each shape comes as two fleets: "identical image", copies of an image's
// facts that differ in target.ref only, and "realistic fleet", live host
// documents with their baselines, baked from three images, whose GPUs,
// counters, sockets and a few drifted packages differ host by host (see
// realisticFleet), scanned with fleet params.
func measureFleets(gpuhost, sample, tree string, nDocs, runs int) ([]measurement, error) {
	params := filepath.Join(os.TempDir(), fmt.Sprintf("gpuhost-bench-%d.params.yaml", os.Getpid()))
	if err := writeFleetParams(params); err != nil {
		return nil, err
	}
	defer os.Remove(params)
	var table []measurement
	for _, fleet := range []struct {
		label, dir string
		n          int
		make       func([]byte, int) ([]byte, error)
		flags      []string
	}{
		{"identical image, sample-image hosts", sample, nDocs, manyDocs, nil},
		{"realistic fleet, sample-image hosts", sample, nDocs, realisticFleet, []string{"--params", params}},
		{"identical image, 1,500-package hosts", tree, nDocs / 10, manyDocs, nil},
		{"realistic fleet, 1,500-package hosts", tree, nDocs / 10, realisticFleet, []string{"--params", params}},
	} {
		// The same fleet as a report stream (NDJSON, one report per host)
		// and as the --summary table over all hosts.
		for _, mode := range []struct {
			label string
			args  []string
		}{
			{"", []string{"--format", "json"}},
			{" --summary", []string{"--summary"}},
		} {
			m, err := measureScanFacts(gpuhost, fleet.dir, fleet.n, max(runs/5, 1), fleet.make, append(mode.args, fleet.flags...)...)
			if err != nil {
				return nil, err
			}
			m.name = fmt.Sprintf("gpuhost scan facts%s (%d docs, %s)", mode.label, fleet.n, fleet.label)
			table = append(table, m)
		}
	}
	return table, nil
}

func measureLynis(tmp, tree string, runs int, table *[]measurement) error {
	if lynis, err := exec.LookPath("lynis"); err == nil {
		m := measurement{name: "lynis audit system --rootdir"}
		report := filepath.Join(tmp, "lynis-report.dat")
		for range max(runs/5, 1) {
			res, err := timed("", false, lynis, "audit", "system", "--rootdir", tree, "--quick", "--no-colors",
				"--no-log", "--report-file", report)
			if err != nil {
				return fmt.Errorf("lynis: %w\n%s", err, res.stderr)
			}
			m.add(res)
		}
		m.finding = summarizeLynis(report)
		*table = append(*table, m)
	} else {
		fmt.Println("lynis not found: install it (make bench does) to compare")
	}
	return nil
}

// measureScanFacts evaluates n saved documents of the target at dir in one
// `scan facts` call with the given flags, runs times.
func measureScanFacts(gpuhost, dir string, n, runs int, makeDocs func([]byte, int) ([]byte, error), flags ...string) (measurement, error) {
	var m measurement
	doc, err := exec.Command(gpuhost, "facts", "rootfs", dir).Output()
	if err != nil {
		return m, fmt.Errorf("gpuhost facts rootfs %s: %w", dir, err)
	}
	ndjson, err := makeDocs(doc, n)
	if err != nil {
		return m, err
	}
	input := filepath.Join(os.TempDir(), fmt.Sprintf("gpuhost-bench-%d.ndjson", os.Getpid()))
	if err := os.WriteFile(input, ndjson, 0o600); err != nil {
		return m, err
	}
	defer os.Remove(input)
	docKB := len(ndjson) / n / 1024
	ndjson = nil
	for range runs {
		res, err := timed(input, false, gpuhost, append([]string{"scan", "facts"}, flags...)...)
		if err != nil && exitCode(err) != 1 {
			return m, fmt.Errorf("gpuhost scan facts: %w\n%s", err, res.stderr)
		}
		m.add(res)
	}
	m.finding = fmt.Sprintf("%.0f documents/s (%d KB each; %.0f per CPU-second)", float64(n)/m.median().Seconds(),
		docKB, float64(n)/m.medianCPU().Seconds())
	return m, nil
}

type result struct {
	wall   time.Duration
	cpu    time.Duration
	rss    int64
	stdout []byte
	stderr []byte
}

func (m *measurement) add(r result) {
	m.wall = append(m.wall, r.wall)
	m.cpu = append(m.cpu, r.cpu)
	m.maxRSS = max(m.maxRSS, r.rss)
}

// rssMarker prefixes GNU time's report: the peak RSS in KiB, then the user
// and system CPU seconds.
const rssMarker = "GPUHOST_BENCH_MAXRSS_KB="

// timed runs a command and measures its wall time and peak RSS. The RSS
// comes from GNU time wrapped around the command: Go starts children with
// CLONE_VM, so a child's own ru_maxrss, read here, would include this
// process's memory.
func timed(stdin string, keepOutput bool, name string, args ...string) (result, error) {
	cmd := exec.Command("/usr/bin/time", append([]string{"-f", rssMarker + "%M %U %S", name}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &errb
	if keepOutput {
		cmd.Stdout = &out
	}
	if stdin != "" {
		f, err := os.Open(stdin)
		if err != nil {
			return result{}, err
		}
		defer f.Close()
		cmd.Stdin = f
	}
	start := time.Now()
	err := cmd.Run()
	r := result{wall: time.Since(start), stdout: out.Bytes(), stderr: errb.Bytes()}
	if i := bytes.LastIndex(r.stderr, []byte(rssMarker)); i >= 0 {
		var user, sys float64
		fmt.Sscanf(string(r.stderr[i+len(rssMarker):]), "%d %f %f", &r.rss, &user, &sys)
		r.cpu = time.Duration((user + sys) * float64(time.Second))
		r.stderr = r.stderr[:i]
	}
	return r, err
}

func exitCode(err error) int {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	return -1
}

// buildTree makes a tree shaped like a GPU image: the sample's configuration,
// a large dpkg status, and many files the collectors must not walk.
func buildTree(tree, sample string, nPackages, nFiles int) error {
	if err := os.CopyFS(tree, os.DirFS(sample)); err != nil {
		return err
	}
	status := filepath.Join(tree, "var/lib/dpkg/status")
	if err := os.MkdirAll(filepath.Dir(status), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(status, packages.SyntheticDpkgStatus(nPackages), 0o644); err != nil {
		return err
	}
	perDir := 200
	for i := range nFiles {
		dir := filepath.Join(tree, "usr/share/doc", fmt.Sprintf("pkg%04d", i/perDir))
		if i%perDir == 0 {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
		}
		name := filepath.Join(dir, fmt.Sprintf("file%05d.txt", i))
		if err := os.WriteFile(name, []byte("documentation\n"), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// manyDocs turns one facts document into n NDJSON lines, each a different host.
func manyDocs(doc []byte, n int) ([]byte, error) {
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		return nil, fmt.Errorf("parsing facts: %w", err)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	target, _ := m["target"].(map[string]any)
	for i := range n {
		target["ref"] = fmt.Sprintf("gpu-node-%05d", i)
		if err := enc.Encode(m); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

func summarizeReport(out []byte) string {
	var rep struct {
		Summary struct {
			Total    int            `json:"total"`
			ByStatus map[string]int `json:"by_status"`
		} `json:"summary"`
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		return "unreadable report: " + err.Error()
	}
	s := rep.Summary
	return fmt.Sprintf("%d checks: %d fail, %d error, %d skip, %d pass", s.Total,
		s.ByStatus["fail"], s.ByStatus["error"], s.ByStatus["skip"], s.ByStatus["pass"])
}

var lynisLine = regexp.MustCompile(`^(warning|suggestion)\[\]=`)

func summarizeLynis(report string) string {
	data, err := os.ReadFile(report)
	if err != nil {
		return "no report: " + err.Error()
	}
	counts := map[string]int{}
	tests := 0
	for _, line := range strings.Split(string(data), "\n") {
		if m := lynisLine.FindStringSubmatch(line); m != nil {
			counts[m[1]]++
		}
		if strings.HasPrefix(line, "tests_executed=") {
			tests = strings.Count(line, "|")
		}
	}
	return fmt.Sprintf("%d tests: %d warnings, %d suggestions", tests, counts["warning"], counts["suggestion"])
}
