package osinfo

import (
	"context"
	"fmt"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/textfile"
)

// limitsConf is pam_limits' main file, read before its drop-ins.
const limitsConf = "/etc/security/limits.conf"

// limitsDir holds pam_limits' drop-ins, read in name order.
const limitsDir = "/etc/security/limits.d"

// maxLimitEntries bounds the lines the limits files may hold together.
const maxLimitEntries = 16384

// CollectLimits reads the resource limits pam_limits sets at a login, in
// the order it reads them. It reads the target alone.
func CollectLimits(_ context.Context, env *collect.Env) (*facts.Limits, error) {
	files, err := dropIns(env.FS, []string{limitsDir}, ".conf")
	if err != nil {
		return nil, fmt.Errorf("reading resource limits: %w", err)
	}
	files = append([]dropIn{{name: limitsConf, display: limitsConf}}, files...)
	l := &facts.Limits{Files: []string{}, Entries: []facts.LimitEntry{}}
	for _, f := range files {
		data, ok, err := readDropIn(env.FS, f)
		if err != nil {
			return nil, fmt.Errorf("reading resource limits: %w", err)
		}
		if !ok {
			continue
		}
		l.Files = append(l.Files, f.display)
		if l.Entries, err = parseLimits(data, f.display, l.Entries); err != nil {
			return nil, err
		}
	}
	return l, nil
}

// parseLimits appends one limits.conf(5) file's lines to entries, as
// pam_limits reads them: "#" starts a comment anywhere, and a line of other
// than four words, or of a type other than soft, hard and "-", is passed
// over, as pam_limits passes over it.
func parseLimits(data []byte, file string, entries []facts.LimitEntry) ([]facts.LimitEntry, error) {
	for i, raw := range textfile.Lines(data) {
		line, _, _ := strings.Cut(raw, "#")
		f := strings.Fields(line)
		if len(f) != 4 || (f[1] != "soft" && f[1] != "hard" && f[1] != "-") {
			continue
		}
		if len(entries) == maxLimitEntries {
			return nil, fmt.Errorf("parsing %s: more than %d limits", file, maxLimitEntries)
		}
		entries = append(entries, facts.LimitEntry{Domain: f[0], Type: f[1], Item: f[2], Value: f[3], File: file, Line: i + 1})
	}
	return entries, nil
}
