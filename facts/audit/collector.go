package audit

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/coreos/go-systemd/v22/unit"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/osinfo"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// Where auditd and its companions keep their configuration.
const (
	rulesDir          = "/etc/audit/rules.d"
	rulesFile         = "/etc/audit/audit.rules"
	auditdConf        = "/etc/audit/auditd.conf"
	auRemoteConf      = "/etc/audit/plugins.d/au-remote.conf"
	audispRemoteConf  = "/etc/audit/audisp-remote.conf"
	journalUploadConf = "/etc/systemd/journal-upload.conf"
	// maxConfigFile bounds one configuration or rules file.
	maxConfigFile = 4 << 20
	// maxRulesFiles bounds the files in rules.d.
	maxRulesFiles = 1024
)

// auditdBinaries are where Debian and Ubuntu (and usrmerge) put auditd.
var auditdBinaries = []string{"/sbin/auditd", "/usr/sbin/auditd"}

// ActiveState asks a live host's service manager for a unit's state; the
// orchestrator passes osinfo.UnitActiveState.
type ActiveState func(ctx context.Context, env *collect.Env, unit string) (state, reason string)

// Collector reads the audit facts; its fields are what it asks of a live
// host.
type Collector struct {
	// State answers for auditd.service on a live host.
	State ActiveState
	// Kernel lists the rules the kernel holds on a live host; nil asks
	// the kernel (KernelRules).
	Kernel func(ctx context.Context) ([]facts.AuditRule, error)
}

// Collect reads auditd's files, and on a live host the unit's state and
// the kernel's rules. A target without auditd still gets its facts: the
// checks fail it for that, rather than skipping. It reads the target
// alone, needing no other collector's facts.
func (c Collector) Collect(ctx context.Context, env *collect.Env) (*facts.Audit, error) {
	a := &facts.Audit{RulesFiles: []string{}, Rules: []facts.AuditRule{}}
	for _, b := range auditdBinaries {
		if info, err := env.FS.Stat(b); err == nil && info.Mode().IsRegular() {
			a.Installed = true
		}
	}
	enabled, _, err := osinfo.EnabledUnits(env.FS, env.Live)
	if err != nil {
		return nil, err
	}
	a.Enabled = slices.Contains(enabled, "auditd.service")
	if err := readRules(env.FS, a); err != nil {
		return nil, err
	}
	cfg, err := readAuditdConf(env.FS)
	if err != nil {
		return nil, err
	}
	a.Config = cfg
	if a.Remote, err = readRemote(env.FS, slices.Contains(enabled, "systemd-journal-upload.service")); err != nil {
		return nil, err
	}
	if env.Live {
		if c.State != nil {
			a.Active, _ = c.State(ctx, env, "auditd.service")
		}
		list := c.Kernel
		if list == nil {
			list = KernelRules
		}
		a.Kernel = &facts.AuditKernel{Rules: []facts.AuditRule{}, Unloaded: []facts.AuditRule{}, Unexpected: []facts.AuditRule{}}
		if rules, err := list(ctx); err != nil {
			a.Kernel.Error = err.Error()
		} else {
			a.Kernel.Rules = rules
			a.Kernel.Unloaded, a.Kernel.Unexpected, a.Kernel.NotCompared = CompareKernel(a.Rules, rules)
		}
	}
	return a, nil
}

// readRules reads the rules as auditd.service loads them: augenrules joins
// rules.d/*.rules in name order; without any, audit.rules is loaded as it
// is.
func readRules(fsys sysroot.FS, a *facts.Audit) error {
	var files []string
	entries, err := fsys.ReadDir(rulesDir)
	if err != nil && !sysroot.IsNotExist(err) {
		return fmt.Errorf("reading %s: %w", fsys.Display(rulesDir), err)
	}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".rules") && e.Type().IsRegular() {
			files = append(files, path.Join(rulesDir, e.Name()))
		}
	}
	if len(files) > maxRulesFiles {
		return fmt.Errorf("reading %s: more than %d rules files", fsys.Display(rulesDir), maxRulesFiles)
	}
	if len(files) == 0 {
		if _, err := fsys.Stat(rulesFile); err == nil {
			files = []string{rulesFile}
		}
	}
	for _, name := range files {
		data, err := fsys.ReadFileLimit(name, maxConfigFile)
		if err != nil {
			return fmt.Errorf("reading %s: %w", fsys.Display(name), err)
		}
		rules, err := ParseRules(fsys.Display(name), data)
		if err != nil {
			return err
		}
		if len(a.Rules)+len(rules) > maxRules {
			return fmt.Errorf("reading %s: more than %d rules in all", fsys.Display(name), maxRules)
		}
		a.RulesFiles = append(a.RulesFiles, fsys.Display(name))
		a.Rules = append(a.Rules, rules...)
	}
	return nil
}

// Setting is the value of one "key = value" line and the line it is on.
type Setting struct {
	Value string
	Line  int
}

// readKeyValues reads a "key = value" file such as auditd.conf, keys
// lower-cased; a missing file is an empty map.
func readKeyValues(fsys sysroot.FS, name string) (map[string]Setting, error) {
	data, err := fsys.ReadFileLimit(name, maxConfigFile)
	if sysroot.IsNotExist(err) {
		return map[string]Setting{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", fsys.Display(name), err)
	}
	return ParseKeyValues(fsys.Display(name), data)
}

// ParseKeyValues parses auditd.conf's format: "key = value" lines and #
// comments, each key with its value and line (the last, for a key set
// twice, as auditd takes it). display names the file in errors.
func ParseKeyValues(display string, data []byte) (map[string]Setting, error) {
	kv := map[string]Setting{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), maxRuleLine)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return nil, fmt.Errorf("parsing %s line %d: want key = value", display, n)
		}
		kv[strings.ToLower(strings.TrimSpace(k))] = Setting{Value: strings.TrimSpace(v), Line: n}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", display, err)
	}
	return kv, nil
}

// readAuditdConf reads auditd.conf with auditd's defaults (auditd.conf(5))
// for what it leaves out.
func readAuditdConf(fsys sysroot.FS) (facts.AuditdConfig, error) {
	kv, err := readKeyValues(fsys, auditdConf)
	if err != nil {
		return facts.AuditdConfig{}, err
	}
	display := fsys.Display(auditdConf)
	locations := map[string]collect.FileLine{}
	// value is the setting k as written, or def when auditd.conf leaves it
	// out; a setting the file gives is placed on its line.
	value := func(k, def string) string {
		if s, ok := kv[k]; ok && s.Value != "" {
			locations[k] = collect.FileLine{File: display, Line: s.Line}
			return s.Value
		}
		return def
	}
	get := func(k, def string) string { return strings.ToLower(value(k, def)) }
	cfg := facts.AuditdConfig{
		Path:                 display,
		LogFile:              value("log_file", "/var/log/audit/audit.log"),
		MaxLogFileAction:     get("max_log_file_action", "rotate"),
		SpaceLeftAction:      get("space_left_action", "syslog"),
		AdminSpaceLeftAction: get("admin_space_left_action", "suspend"),
		DiskFullAction:       get("disk_full_action", "suspend"),
		DiskErrorAction:      get("disk_error_action", "syslog"),
		NumLogs:              5,
	}
	// The actions may carry an argument (exec /path): the first word
	// is the action.
	for _, p := range []*string{&cfg.MaxLogFileAction, &cfg.SpaceLeftAction, &cfg.AdminSpaceLeftAction, &cfg.DiskFullAction, &cfg.DiskErrorAction} {
		if f := strings.Fields(*p); len(f) > 0 {
			*p = f[0]
		}
	}
	if s, ok := kv["num_logs"]; ok {
		n, err := strconv.Atoi(s.Value)
		if err != nil || n < 0 {
			return cfg, fmt.Errorf("parsing %s: num_logs %q is not a count", display, s.Value)
		}
		cfg.NumLogs = n
		locations["num_logs"] = collect.FileLine{File: display, Line: s.Line}
	}
	if len(locations) > 0 {
		cfg.Locations = locations
	}
	return cfg, nil
}

// readRemote reads where the records are forwarded. journald upload counts
// only when its unit is enabled: the file alone sends nothing.
func readRemote(fsys sysroot.FS, journalUpload bool) (facts.AuditRemote, error) {
	r := facts.AuditRemote{JournalUpload: journalUpload}
	plugin, err := readKeyValues(fsys, auRemoteConf)
	if err != nil {
		return r, err
	}
	r.AudispRemoteActive = strings.EqualFold(plugin["active"].Value, "yes")
	remote, err := readKeyValues(fsys, audispRemoteConf)
	if err != nil {
		return r, err
	}
	r.AudispRemoteServer = remote["remote_server"].Value
	data, err := fsys.ReadFileLimit(journalUploadConf, maxConfigFile)
	switch {
	case err == nil:
		opts, err := unit.DeserializeOptions(bytes.NewReader(data))
		if err != nil {
			return r, fmt.Errorf("parsing %s: %w", fsys.Display(journalUploadConf), err)
		}
		for _, o := range opts {
			if o.Section == "Upload" && o.Name == "URL" {
				r.JournalUploadURL = o.Value
			}
		}
	case !sysroot.IsNotExist(err):
		return r, fmt.Errorf("reading %s: %w", fsys.Display(journalUploadConf), err)
	}
	return r, nil
}
