package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// packerRun runs `packer build` of one template with a private plugin
// directory.
type packerRun struct {
	packer, plugin, template, varFile string
	// vars are extra `-var name=value` arguments (the gate's trivy_db).
	vars       []string
	pluginPath string
	timeout    time.Duration
}

// line is one line of a build's output and when it arrived.
type line struct {
	at   time.Duration
	text string
}

// timing is one named duration.
type timing struct {
	name string
	dur  time.Duration
}

// buildResult is what one packer build took and what its output says.
type buildResult struct {
	wall time.Duration
	// steps is the builder's own "Step timings" table.
	steps []timing
	// phases splits the steps by the markers in the build's output.
	phases []timing
	// suite, variant and mirror are from the builder's "Bootstrapping"
	// line, so the plain build fetches from the very same archive.
	suite, variant, mirror string
	// bootCache is what the builder's bootstrap cache did: "hit", "miss",
	// "not used: REASON", or "" when the template sets no cache.
	bootCache string
}

func (p *packerRun) env() []string {
	return append(os.Environ(), "PACKER_PLUGIN_PATH="+p.pluginPath, "CHECKPOINT_DISABLE=1", "PACKER_NO_COLOR=1")
}

// install puts the plugin into the private plugin directory, offline.
func (p *packerRun) install() error {
	cmd := exec.Command(p.packer, "plugins", "install", "--path", p.plugin, "github.com/gpuhost/gpuhost")
	cmd.Env = p.env()
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("packer plugins install: %w\n%s", err, out)
	}
	return nil
}

// build bakes the template into out with cache as its apt cache, keeps
// the whole output in out.log, and parses it.
func (p *packerRun) build(out, cache string) (*buildResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()
	logFile := out + ".log"
	args := []string{"build", "-force", "-var-file=" + p.varFile, "-var", "output_dir=" + out, "-var", "apt_cache_dir=" + cache}
	for _, v := range p.vars {
		args = append(args, "-var", v)
	}
	cmd := exec.CommandContext(ctx, p.packer, append(args, filepath.Base(p.template))...)
	cmd.Dir = filepath.Dir(p.template)
	cmd.Env = p.env()
	lines, wall, err := runTimed(cmd, logFile)
	if err != nil {
		return nil, fmt.Errorf("packer build (output in %s): %w", logFile, err)
	}
	r := &buildResult{wall: wall}
	if err := r.parse(lines); err != nil {
		return nil, fmt.Errorf("reading %s: %w", logFile, err)
	}
	return r, nil
}

// runTimed runs cmd with stdout and stderr into one stream, copies every
// line to logFile and returns the lines with the time each arrived.
func runTimed(cmd *exec.Cmd, logFile string) ([]line, time.Duration, error) {
	f, err := os.Create(logFile)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	start := time.Now()
	done := make(chan []line)
	go func() {
		var got []line
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			got = append(got, line{time.Since(start), sc.Text()})
			// The arrival time makes the log a profile of the build.
			fmt.Fprintf(f, "[%7.1fs] %s\n", got[len(got)-1].at.Seconds(), sc.Text())
		}
		_, _ = io.Copy(io.Discard, pr)
		done <- got
	}()
	err = cmd.Run()
	wall := time.Since(start)
	pw.Close()
	return <-done, wall, err
}

var (
	bootstrapRE = regexp.MustCompile(`Bootstrapping \S+ (\S+) \((\S+)\) from (\S+)`)
	bootCacheRE = regexp.MustCompile(`^(?:bootstrap cache (hit|miss) [0-9a-f]{64}|Bootstrap cache (not used: .*))`)
	stepRowRE   = regexp.MustCompile(`^(\S+)\s+([0-9]+(?:\.[0-9]+)?)$`)
	// Where the time goes inside the steps: mmdebstrap's phases, each
	// provisioner starting, each step of the gpuhost-gpu plan, packing.
	phaseRE = regexp.MustCompile(`^(?:I: (running apt-get update|downloading packages|extracting archives|installing essential packages|installing remaining packages|cleaning package lists)|Provisioning with (\S+)|Uploading (\S+) => |==> gpuhost-gpu step: (.+)|(Writing an? \S+|Packing) )`)
)

// uiText strips Packer's "==> build.source: " or "    build.source: "
// prefix from a line of its output.
func uiText(s string) string {
	t := strings.TrimLeft(s, " ")
	t = strings.TrimPrefix(t, "==> ")
	if i := strings.Index(t, ": "); i > 0 && !strings.ContainsAny(t[:i], " \t") {
		return t[i+2:]
	}
	return t
}

func (r *buildResult) parse(lines []line) error {
	inTable := false
	var phaseStart time.Duration
	phaseName := ""
	endPhase := func(at time.Duration) {
		if phaseName != "" {
			r.phases = append(r.phases, timing{phaseName, at - phaseStart})
		}
		phaseName = ""
	}
	for _, l := range lines {
		text := uiText(l.text)
		if m := bootstrapRE.FindStringSubmatch(text); m != nil && r.mirror == "" {
			r.suite, r.variant, r.mirror = m[1], m[2], m[3]
		}
		if m := bootCacheRE.FindStringSubmatch(text); m != nil && r.bootCache == "" {
			r.bootCache = m[1] + m[2]
		}
		if strings.HasPrefix(text, "Unmounting ") || strings.HasPrefix(text, "I: success in ") {
			endPhase(l.at)
		}
		if m := phaseRE.FindStringSubmatch(text); m != nil && !inTable {
			endPhase(l.at)
			switch {
			case m[1] != "":
				phaseName = "mmdebstrap: " + m[1]
			case m[2] != "":
				phaseName = "provisioner " + m[2]
			case m[3] != "":
				phaseName = "upload " + filepath.Base(m[3])
			case m[4] != "":
				phaseName = "gpu: " + m[4]
			default:
				phaseName = "pack"
			}
			phaseStart = l.at
		}
		if strings.HasSuffix(text, "Step timings:") {
			endPhase(l.at)
			inTable = true
			continue
		}
		if !inTable {
			continue
		}
		m := stepRowRE.FindStringSubmatch(strings.TrimSpace(text))
		if m == nil {
			continue
		}
		secs, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			return fmt.Errorf("step %s: %w", m[1], err)
		}
		if m[1] == "total" {
			inTable = false
			continue
		}
		r.steps = append(r.steps, timing{m[1], time.Duration(secs * float64(time.Second))})
	}
	if len(r.steps) == 0 {
		return fmt.Errorf("the build printed no step timings")
	}
	if r.mirror == "" {
		return fmt.Errorf("the build printed no \"Bootstrapping ... from MIRROR\" line")
	}
	return nil
}
