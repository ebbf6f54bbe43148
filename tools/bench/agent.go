package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// measureAgent starts the agent as a host runs it (a baseline from this
// host, so the drift checks run; the listener on), waits for its first run
// to complete, and reads the run's wall time from /metrics, the process's
// CPU time so far, and its resident memory once idle after the run.
//
// The agent is agentBin, the lean build a node runs (bin/gpuhost-agent),
// and the baseline is written by the full gpuhost.
func measureAgent(gpuhost, agentBin, tmp string, runs int) (measurement, error) {
	m := measurement{name: filepath.Base(agentBin) + " agent (one scan + drift run of this host; RSS idle after it)"}
	manifest := filepath.Join(tmp, "manifest.json")
	if out, err := exec.Command(gpuhost, "manifest", "host", "-o", manifest).CombinedOutput(); err != nil {
		return m, fmt.Errorf("gpuhost manifest host: %v: %s", err, out)
	}
	var idle, anon []int64
	for i := range runs {
		r, status, err := agentOnce(agentBin, filepath.Join(tmp, fmt.Sprintf("agent-%d.db", i)), manifest)
		if err != nil {
			return m, err
		}
		m.add(r)
		idle = append(idle, statusKB(status, "VmRSS:"))
		anon = append(anon, statusKB(status, "RssAnon:"))
	}
	slices.Sort(idle)
	slices.Sort(anon)
	// RSS counts the pages of the binary that start-up touched (file
	// pages, shared and reclaimable) as well as the process's own memory.
	m.finding = fmt.Sprintf("run %s wall (target < 1 s); idle RSS %.1f MB (target < 60 MB), %.1f MB of it anonymous; CPU and peak RSS include start-up",
		median(m.wall).Round(time.Millisecond), float64(idle[len(idle)/2])/1024, float64(anon[len(anon)/2])/1024)
	return m, nil
}

// agentOnce runs one agent until its first run is recorded. The result's
// wall time is the run's own (gpuhost_last_run_duration_seconds); cpu and
// rss are the process's, start-up included; status is /proc/PID/status two
// seconds after the run.
func agentOnce(gpuhost, db, manifest string) (result, []byte, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return result{}, nil, err
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(gpuhost, "agent", "--db", db, "--listen", addr, "--interval", "1h", "--baseline", manifest)
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		return result{}, nil, err
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	var runWall time.Duration
	deadline := time.Now().Add(2 * time.Minute)
	for runWall == 0 {
		if time.Now().After(deadline) {
			return result{}, nil, fmt.Errorf("the agent recorded no run within two minutes")
		}
		time.Sleep(50 * time.Millisecond)
		runWall = lastRunDuration("http://" + addr + "/metrics")
	}
	time.Sleep(2 * time.Second)
	pid := cmd.Process.Pid
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return result{}, nil, err
	}
	cpu, err := processCPU(pid)
	if err != nil {
		return result{}, nil, err
	}
	return result{wall: runWall, cpu: cpu, rss: statusKB(status, "VmHWM:")}, status, nil
}

// lastRunDuration reads gpuhost_last_run_duration_seconds from the
// agent's /metrics, or 0 while no run has completed.
func lastRunDuration(url string) time.Duration {
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "gpuhost_last_run_duration_seconds "); ok {
			if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
				return time.Duration(s * float64(time.Second))
			}
		}
	}
	return 0
}

// processCPU is a process's user and system time from /proc/PID/stat.
func processCPU(pid int) (time.Duration, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces; the fields after it do not.
	fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	if len(fields) < 13 {
		return 0, fmt.Errorf("short /proc/%d/stat", pid)
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	// USER_HZ is 100 on Linux for every architecture Go supports here.
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// statusKB reads a "Name:   N kB" line of /proc/PID/status.
func statusKB(status []byte, name string) int64 {
	for line := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, name); ok {
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return n
		}
	}
	return 0
}
