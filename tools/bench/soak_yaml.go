package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The YAML soak: mutated waiver and params files, each run through the
// command an operator would run on it, must end within soakDeadline with a
// verdict (0 or 1 when the yamlMutation left a valid file, 2 when it did not),
// and never exit 0 when the yamlMutation is one that no valid file survives.
const (
	soakDeadline = 20 * time.Second
	soakRSSLimit = 512 << 10 // KiB
)

// soakRun is what one run of gpuhost on a mutant did.
type soakRun struct {
	kind    string
	damaged bool
	code    int
	wall    time.Duration
	rss     int64 // KiB
	stderr  string
}

// yamlMutation changes a YAML file; damaging ones leave no valid file behind.
type yamlMutation struct {
	name     string
	damaging bool
	apply    func(r *rand.Rand, data []byte) []byte
}

var yamlMutations = []yamlMutation{
	{"flip a byte", false, func(r *rand.Rand, d []byte) []byte {
		d = append([]byte(nil), d...)
		d[r.IntN(len(d))] ^= byte(1 + r.IntN(255))
		return d
	}},
	{"truncate", false, func(r *rand.Rand, d []byte) []byte { return d[:r.IntN(len(d))] }},
	{"duplicate a line", false, func(r *rand.Rand, d []byte) []byte {
		lines := strings.SplitAfter(string(d), "\n")
		i := r.IntN(len(lines))
		return []byte(strings.Join(append(lines[:i+1:i+1], lines[i:]...), ""))
	}},
	{"nest flow collections 100,000 deep", true, func(r *rand.Rand, d []byte) []byte {
		n := 100_000
		return append(append(append([]byte(nil), d...), "\nbomb: "+strings.Repeat("[", n)...), strings.Repeat("]", n)+"\n"...)
	}},
	{"billion laughs", true, func(r *rand.Rand, d []byte) []byte {
		var b strings.Builder
		b.WriteString("lol0: &lol0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
		for i := 1; i <= 9; i++ {
			fmt.Fprintf(&b, "lol%d: &lol%d [", i, i)
			for j := range 10 {
				if j > 0 {
					b.WriteString(", ")
				}
				fmt.Fprintf(&b, "*lol%d", i-1)
			}
			b.WriteString("]\n")
		}
		return []byte(b.String())
	}},
	{"an unknown key", true, func(r *rand.Rand, d []byte) []byte {
		return append(append([]byte(nil), d...), fmt.Sprintf("\nzz_unknown_%d: 1\n", r.IntN(1000))...)
	}},
}

// soakYAML writes n mutants of each base file and runs each through
// gpuhost: waiver files with `waivers check`, params with `scan facts` of a
// saved document. It prints the figures and fails when a run hangs, goes
// past the memory limit, exits with something other than 0, 1 or 2, or
// exits 0 on a damaging yamlMutation.
func soakYAML(gpuhost, sample string, n int) error {
	tmp, err := os.MkdirTemp("", "gpuhost-soak-yaml-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	facts := filepath.Join(tmp, "facts.json")
	out, err := exec.Command(gpuhost, "facts", "rootfs", sample).Output()
	if err != nil && exitCode(err) != 2 {
		return fmt.Errorf("gpuhost facts rootfs %s: %w", sample, err)
	}
	if err := os.WriteFile(facts, out, 0o600); err != nil {
		return err
	}
	bases := []struct {
		kind, file string
		args       func(mutant string) []string
	}{
		{"waivers", "images/waivers-debian-12.yaml", func(m string) []string { return []string{"waivers", "check", m} }},
		{"params", "images/params-debian-12.yaml", func(m string) []string {
			return []string{"scan", "facts", facts, "--params", m, "--format", "json"}
		}},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	type job struct {
		kind    string
		damaged bool
		args    []string
	}
	var jobs []job
	for _, b := range bases {
		data, err := os.ReadFile(b.file)
		if err != nil {
			return err
		}
		for i := range n / len(bases) {
			m := yamlMutations[rng.IntN(len(yamlMutations))]
			file := filepath.Join(tmp, fmt.Sprintf("%s-%04d.yaml", b.kind, i))
			if err := os.WriteFile(file, m.apply(rng, data), 0o600); err != nil {
				return err
			}
			jobs = append(jobs, job{b.kind, m.damaging, b.args(file)})
		}
	}
	runs := make([]soakRun, len(jobs))
	var wg sync.WaitGroup
	next := make(chan int)
	start := time.Now()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				runs[i] = soakOne(gpuhost, jobs[i].args)
				runs[i].kind, runs[i].damaged = jobs[i].kind, jobs[i].damaged
			}
		}()
	}
	for i := range jobs {
		next <- i
	}
	close(next)
	wg.Wait()
	return reportYAMLSoak("YAML", runs, time.Since(start))
}

// soakOne runs gpuhost once under the soak's deadline.
func soakOne(gpuhost string, args []string) soakRun {
	ctx, cancel := context.WithTimeout(context.Background(), soakDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, gpuhost, args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	begin := time.Now()
	err := cmd.Run()
	r := soakRun{wall: time.Since(begin), code: exitCode(err), stderr: stderr.String()}
	if err == nil {
		r.code = 0
	}
	if ctx.Err() != nil {
		r.code = -1
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.rss = ru.Maxrss
	}
	return r
}

// reportYAMLSoak prints one soak's figures and returns an error naming every
// run that broke its contract.
func reportYAMLSoak(what string, runs []soakRun, took time.Duration) error {
	codes := map[int]int{}
	var worstWall time.Duration
	var worstRSS int64
	var problems []string
	for i, r := range runs {
		codes[r.code]++
		worstWall, worstRSS = max(worstWall, r.wall), max(worstRSS, r.rss)
		switch {
		case r.code == -1:
			problems = append(problems, fmt.Sprintf("run %d (%s) did not end within %s", i, r.kind, soakDeadline))
		case r.code < 0 || r.code > 2:
			problems = append(problems, fmt.Sprintf("run %d (%s) exited %d: %s", i, r.kind, r.code, lastLine(r.stderr)))
		case r.code == 0 && r.damaged:
			problems = append(problems, fmt.Sprintf("run %d (%s) exited 0 on a damaged input", i, r.kind))
		}
		if r.rss > soakRSSLimit {
			problems = append(problems, fmt.Sprintf("run %d (%s) peaked at %d MiB", i, r.kind, r.rss>>10))
		}
	}
	fmt.Printf("soak %s: %d runs in %s; exits 0: %d, 1: %d, 2: %d; slowest %s (limit %s), peak RSS %.1f MiB (limit %d)\n",
		what, len(runs), took.Round(time.Second), codes[0], codes[1], codes[2], worstWall.Round(time.Millisecond), soakDeadline,
		float64(worstRSS)/1024, soakRSSLimit>>10)
	if len(problems) > 0 {
		return errors.New("soak " + what + ":\n  " + strings.Join(problems, "\n  "))
	}
	return nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
