package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// maxStatusBytes bounds a dpkg status file; a minbase image with the GPU
// stack has well under 1 MiB.
const maxStatusBytes = 64 << 20

// packageDiff says whether two rootfs trees have the same installed
// packages at the same versions.
type packageDiff struct {
	ours, plain int
	// differ lists "name: ours VERSION, plain VERSION" for each package
	// that is not the same in both (a missing one shows as "-").
	differ []string
}

// comparePackages reads the dpkg status of both trees.
func comparePackages(ours, plain string) (*packageDiff, error) {
	a, err := installed(ours)
	if err != nil {
		return nil, err
	}
	b, err := installed(plain)
	if err != nil {
		return nil, err
	}
	d := &packageDiff{ours: len(a), plain: len(b)}
	names := slices.Sorted(maps.Keys(a))
	for n := range b {
		if _, ok := a[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		va, vb := a[n], b[n]
		if va == vb {
			continue
		}
		d.differ = append(d.differ, fmt.Sprintf("%s: ours %s, plain %s", n, orDash(va), orDash(vb)))
	}
	return d, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// installed returns name:arch -> version of the installed packages in the
// dpkg status of rootfs.
func installed(rootfs string) (map[string]string, error) {
	name := filepath.Join(rootfs, "var/lib/dpkg/status")
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxStatusBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	if len(data) > maxStatusBytes {
		return nil, fmt.Errorf("reading %s: larger than %d bytes", name, maxStatusBytes)
	}
	return parseStatus(data), nil
}

// parseStatus reads the Package, Architecture, Version and Status fields
// of each stanza; only installed packages count.
func parseStatus(data []byte) map[string]string {
	out := map[string]string{}
	var pkg, arch, version, status string
	flush := func() {
		if pkg != "" && strings.HasSuffix(status, " installed") && !strings.Contains(status, "not-installed") {
			out[pkg+":"+arch] = version
		}
		pkg, arch, version, status = "", "", "", ""
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if strings.TrimSpace(l) == "" {
			flush()
			continue
		}
		k, v, ok := strings.Cut(l, ":")
		if !ok || strings.HasPrefix(l, " ") {
			continue
		}
		v = strings.TrimSpace(v)
		switch k {
		case "Package":
			pkg = v
		case "Architecture":
			arch = v
		case "Version":
			version = v
		case "Status":
			status = v
		}
	}
	flush()
	return out
}

func secs(d time.Duration) string { return fmt.Sprintf("%.1f", d.Seconds()) }

// verdict says whether ratio meets a "no more than max" target.
func verdict(ratio, max float64) (string, bool) {
	if ratio <= max {
		return "met", false
	}
	return "MISSED", true
}

// printReport writes the table and returns whether a target was missed.
func printReport(w io.Writer, o options, cold, warm *buildResult, plain *plainResult, pkgs *packageDiff) bool {
	fmt.Fprintf(w, "%-34s %9s\n", "build", "wall (s)")
	n := max(o.rounds, 1)
	fmt.Fprintf(w, "%-34s %9s\n", fmt.Sprintf("ours, cold (fastest of %d)", n), secs(cold.wall))
	fmt.Fprintf(w, "%-34s %9s\n", "ours, warm (cache from cold)", secs(warm.wall))
	fmt.Fprintf(w, "%-34s %9s\n", fmt.Sprintf("plain, cold (fastest of %d)", n), secs(plain.wall))
	fmt.Fprintln(w)

	overhead := cold.wall.Seconds() / plain.wall.Seconds()
	rebuild := warm.wall.Seconds() / cold.wall.Seconds()
	v1, m1 := verdict(overhead, o.overheadMax)
	v2, m2 := verdict(rebuild, o.warmMax)
	fmt.Fprintf(w, "%-34s %6s %10s  %s\n", "ratio", "value", "target", "")
	fmt.Fprintf(w, "%-34s %6.2f %10s  %s\n", "ours cold / plain cold", overhead, fmt.Sprintf("<= %.2f", o.overheadMax), v1)
	fmt.Fprintf(w, "%-34s %6.2f %10s  %s\n", "ours warm / ours cold", rebuild, fmt.Sprintf("<= %.2f", o.warmMax), v2)
	fmt.Fprintln(w)
	fmt.Fprintf(w, "bootstrap cache: cold %s, warm %s\n\n", cacheSays(cold), cacheSays(warm))

	fmt.Fprintf(w, "%-34s %9s %9s\n", "our step timings (s)", "cold", "warm")
	for _, row := range joinTimings(cold.steps, warm.steps) {
		fmt.Fprintf(w, "%-34s %9s %9s\n", row.name, row.a, row.b)
	}
	fmt.Fprintln(w)
	if len(cold.phases) > 0 {
		fmt.Fprintf(w, "%-34s %9s %9s\n", "phases, from the output (s)", "cold", "warm")
		for _, row := range joinTimings(cold.phases, warm.phases) {
			fmt.Fprintf(w, "%-34s %9s %9s\n", row.name, row.a, row.b)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "%-34s %9s\n", "plain step timings (s)", "cold")
	for _, s := range plain.steps {
		fmt.Fprintf(w, "%-34s %9s\n", s.name, secs(s.dur))
	}
	fmt.Fprintln(w)
	if len(pkgs.differ) == 0 {
		fmt.Fprintf(w, "installed packages: identical in ours and plain (%d)\n", pkgs.ours)
	} else {
		fmt.Fprintf(w, "installed packages: ours %d, plain %d; %d differ:\n", pkgs.ours, pkgs.plain, len(pkgs.differ))
		for _, d := range pkgs.differ {
			fmt.Fprintln(w, "  "+d)
		}
	}
	return m1 || m2
}

// cacheSays is what a build's bootstrap cache did, for the report.
func cacheSays(r *buildResult) string {
	if r.bootCache == "" {
		return "off (the template sets no bootstrap_cache_dir)"
	}
	return r.bootCache
}

type timingRow struct{ name, a, b string }

// joinTimings lines up two timing lists by name, in the first one's order
// (a name may repeat, as gpuhost-gpu's "apt update" can: the n-th of a
// name pairs with the n-th).
func joinTimings(a, b []timing) []timingRow {
	used := make([]bool, len(b))
	var rows []timingRow
	for _, t := range a {
		row := timingRow{t.name, secs(t.dur), "-"}
		for j, u := range b {
			if !used[j] && u.name == t.name {
				used[j] = true
				row.b = secs(u.dur)
				break
			}
		}
		rows = append(rows, row)
	}
	for j, u := range b {
		if !used[j] {
			rows = append(rows, timingRow{u.name, "-", secs(u.dur)})
		}
	}
	return rows
}
