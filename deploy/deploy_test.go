package deploy

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/gpuhost/gpuhost/agent"
)

type doc = map[string]any

// testImage is the agent image the tests render the DaemonSet with.
const testImage = "registry.test:5000/gpuhost/gpuhost-agent@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// loadYAML parses every document of every YAML file under kubernetes/, and
// of the DaemonSet rendered with testImage.
func loadYAML(t *testing.T) map[string][]doc {
	t.Helper()
	files, err := filepath.Glob("kubernetes/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no manifests: %v", err)
	}
	var ds bytes.Buffer
	if err := RenderDaemonSet(&ds, testImage); err != nil {
		t.Fatal(err)
	}
	out := map[string][]doc{}
	for _, file := range append(files, "kubernetes/daemonset.yaml.tmpl") {
		var f io.Reader = &ds
		if !strings.HasSuffix(file, ".tmpl") {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			f = bytes.NewReader(b)
		}
		dec := yaml.NewDecoder(f)
		for i := 0; i < 100; i++ {
			var d doc
			err := dec.Decode(&d)
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			if d == nil {
				continue
			}
			if d["apiVersion"] == nil || d["kind"] == nil {
				t.Errorf("%s document %d: no apiVersion or kind", file, i+1)
			}
			kind, _ := d["kind"].(string)
			out[kind] = append(out[kind], d)
		}
	}
	return out
}

// get walks a path of map keys.
func get(d any, path ...string) any {
	for _, k := range path {
		m, ok := d.(map[string]any)
		if !ok {
			return nil
		}
		d = m[k]
	}
	return d
}

func TestDaemonSetSecurity(t *testing.T) {
	docs := loadYAML(t)
	if len(docs["DaemonSet"]) != 1 {
		t.Fatalf("want one DaemonSet, have %d", len(docs["DaemonSet"]))
	}
	spec := get(docs["DaemonSet"][0], "spec", "template", "spec")
	if get(spec, "hostPID") != true {
		t.Error("hostPID is not true")
	}
	if get(spec, "runtimeClassName") != "nvidia" {
		t.Error("runtimeClassName is not nvidia")
	}
	containers, _ := get(spec, "containers").([]any)
	if len(containers) == 0 {
		t.Fatal("no containers")
	}
	// The host root volume, by name.
	hostVol := ""
	vols, _ := get(spec, "volumes").([]any)
	for _, v := range vols {
		if get(v, "hostPath", "path") == "/" {
			hostVol, _ = get(v, "name").(string)
		}
	}
	if hostVol == "" {
		t.Fatal("the host root is not a volume")
	}
	for _, c := range containers {
		name := get(c, "name")
		sc := get(c, "securityContext")
		if get(sc, "readOnlyRootFilesystem") != true {
			t.Errorf("%v: readOnlyRootFilesystem is not true", name)
		}
		if get(sc, "allowPrivilegeEscalation") != false {
			t.Errorf("%v: allowPrivilegeEscalation is not false", name)
		}
		if get(sc, "privileged") == true {
			t.Errorf("%v: privileged", name)
		}
		if drop, _ := get(sc, "capabilities", "drop").([]any); !slices.Contains(drop, any("ALL")) {
			t.Errorf("%v: capabilities not dropped", name)
		}
		mounted := false
		mounts, _ := get(c, "volumeMounts").([]any)
		for _, m := range mounts {
			if get(m, "name") == hostVol {
				mounted = true
				if get(m, "mountPath") != "/host" || get(m, "readOnly") != true {
					t.Errorf("%v: host root mounted at %v, readOnly %v; want /host, read-only", name, get(m, "mountPath"), get(m, "readOnly"))
				}
			}
		}
		if !mounted {
			t.Errorf("%v: host root not mounted", name)
		}
		args, _ := get(c, "args").([]any)
		joined := ""
		for _, a := range args {
			s, _ := a.(string)
			joined += s + " "
		}
		for _, want := range []string{"--host-root=/host", "--tls-cert=", "--token-file="} {
			if !strings.Contains(joined, want) {
				t.Errorf("%v: args lack %s (a listener beyond loopback needs TLS and a token)", name, want)
			}
		}
	}
	if len(docs["ServiceMonitor"]) != 1 || len(docs["PrometheusRule"]) != 1 {
		t.Errorf("want one ServiceMonitor and one PrometheusRule, have %d and %d", len(docs["ServiceMonitor"]), len(docs["PrometheusRule"]))
	}
	ep := get(docs["ServiceMonitor"][0], "spec", "endpoints")
	if eps, _ := ep.([]any); len(eps) == 0 || get(eps[0], "scheme") != "https" {
		t.Errorf("ServiceMonitor does not scrape over https: %v", ep)
	}
	// The GPU series' namespace, pod and container name the workload, not
	// the agent's pod: Prometheus must keep the scraped ones.
	if eps, _ := ep.([]any); len(eps) == 0 || get(eps[0], "honorLabels") != true {
		t.Errorf("ServiceMonitor does not honor the agent's labels: %v", ep)
	}
}

var (
	quoted   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	matchers = regexp.MustCompile(`\{[^}]*\}`)
	ranges   = regexp.MustCompile(`\[[^\]]*\]`)
	numbers  = regexp.MustCompile(`(^|[^A-Za-z0-9_:])[0-9][0-9A-Za-z.]*`)
	grouping = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	ident    = regexp.MustCompile(`[A-Za-z_:][A-Za-z0-9_:]*(\s*\()?`)
	keywords = []string{"and", "or", "unless", "bool", "offset", "by", "without", "on", "ignoring", "group_left", "group_right", "inf", "nan"}
)

// metricsIn returns the metric names a PromQL expression reads: identifiers
// that are not functions, keywords, label names or grouping labels.
func metricsIn(expr string) []string {
	s := quoted.ReplaceAllString(expr, `""`)
	s = matchers.ReplaceAllString(s, "")
	s = ranges.ReplaceAllString(s, "")
	s = grouping.ReplaceAllString(s, "")
	s = numbers.ReplaceAllString(s, "${1}0")
	var out []string
	for _, m := range ident.FindAllString(s, -1) {
		if strings.HasSuffix(m, "(") || slices.Contains(keywords, strings.ToLower(m)) {
			continue
		}
		out = append(out, m)
	}
	return out
}

func TestMetricsIn(t *testing.T) {
	got := metricsIn(`sum by (node) (increase(gpuhost_runs_total{exit_code="2"}[3h])) > 0 unless on(node) time() - up{job="a b"} offset 5m`)
	if !slices.Equal(got, []string{"gpuhost_runs_total", "up"}) {
		t.Errorf("metricsIn = %v", got)
	}
}

func TestAlertsNameOnlyAgentMetrics(t *testing.T) {
	docs := loadYAML(t)
	groups, _ := get(docs["PrometheusRule"][0], "spec", "groups").([]any)
	alerts := map[string]bool{}
	used := map[string]bool{}
	for _, g := range groups {
		rules, _ := get(g, "rules").([]any)
		for _, r := range rules {
			name, _ := get(r, "alert").(string)
			expr, _ := get(r, "expr").(string)
			if name == "" || expr == "" {
				t.Errorf("rule without alert name or expr: %v", r)
				continue
			}
			alerts[name] = true
			ms := metricsIn(expr)
			if len(ms) == 0 {
				t.Errorf("%s: expr names no metric: %s", name, expr)
			}
			for _, m := range ms {
				if !slices.Contains(agent.MetricNames, m) && !slices.Contains(agent.CredentialMetricNames, m) && !slices.Contains(agent.GPUMetricNames, m) && !slices.Contains(agent.NodeMarkMetricNames, m) {
					t.Errorf("%s: %s is not a metric the agent exports (%s)", name, m, expr)
				}
				used[m] = true
			}
			if get(r, "labels", "severity") == nil || get(r, "annotations", "summary") == nil {
				t.Errorf("%s: no severity label or summary", name)
			}
		}
	}
	// The alerts the issue asks for.
	for _, m := range []string{"gpuhost_check_status", "gpuhost_drift_checks_failing", "gpuhost_last_run_timestamp_seconds"} {
		if !used[m] {
			t.Errorf("no alert on %s", m)
		}
	}
	if !alerts["GpuhostCriticalCheckFailed"] || !alerts["GpuhostDriftDetected"] || !alerts["GpuhostLastRunStale"] {
		t.Errorf("alerts: %v", alerts)
	}
}

// unit parses a systemd unit into section.key -> values.
func unit(t *testing.T, file string) map[string][]string {
	t.Helper()
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	section := ""
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = line[1 : len(line)-1]
		default:
			k, v, ok := strings.Cut(line, "=")
			if !ok || section == "" {
				t.Errorf("%s:%d: not a key=value in a section: %q", file, n, line)
				continue
			}
			out[section+"."+k] = append(out[section+"."+k], v)
		}
	}
	return out
}

func TestSystemdUnits(t *testing.T) {
	for _, file := range []string{"systemd/gpuhost-agent.service", "systemd/gpuhost-agentd.service"} {
		u := unit(t, file)
		exec := strings.Join(u["Service.ExecStart"], " ")
		if !strings.Contains(exec, "/gpuhost-agent agent") || !strings.Contains(exec, "--db /var/lib/gpuhost/") {
			t.Errorf("%s: ExecStart %q", file, exec)
		}
		for _, kv := range []string{"NoNewPrivileges=yes", "ProtectSystem=strict", "ReadWritePaths=/var/lib/gpuhost", "StateDirectory=gpuhost"} {
			k, v, _ := strings.Cut(kv, "=")
			if !slices.Contains(u["Service."+k], v) {
				t.Errorf("%s: want %s", file, kv)
			}
		}
	}
	once := unit(t, "systemd/gpuhost-agent.service")
	if !slices.Contains(once["Service.Type"], "oneshot") || !strings.Contains(once["Service.ExecStart"][0], "--once") {
		t.Error("the timer's service must be a oneshot --once run")
	}
	timer := unit(t, "systemd/gpuhost-agent.timer")
	if len(timer["Timer.OnUnitActiveSec"]) == 0 || len(timer["Timer.RandomizedDelaySec"]) == 0 || !slices.Contains(timer["Install.WantedBy"], "timers.target") {
		t.Errorf("timer: %v", timer)
	}
}

// TestSelftestRunsOnlyWhenAsked: the selftest unit powers the machine off,
// so nothing may enable it. Only the udev rule for the boot test's disk
// (serial gpuhost-selftest) or systemd.wants= on the kernel command line
// pulls it in, and it ends in a poweroff whether it passes or not.
func TestSelftestRunsOnlyWhenAsked(t *testing.T) {
	u := unit(t, "systemd/gpuhost-selftest.service")
	for k := range u {
		if strings.HasPrefix(k, "Install.") {
			t.Errorf("gpuhost-selftest.service has an [Install] section (%s): enabling it would power hosts off", k)
		}
	}
	for k := range unit(t, "systemd/gpuhost-selftest-modules.service") {
		if strings.HasPrefix(k, "Install.") {
			t.Errorf("gpuhost-selftest-modules.service has an [Install] section (%s): only a selftest may load its disk's modules", k)
		}
	}
	for _, kv := range []string{"Unit.SuccessAction=poweroff", "Unit.FailureAction=poweroff", "Unit.After=multi-user.target", "Service.Type=oneshot", "Service.ExecStart=/usr/local/lib/gpuhost/gpuhost-selftest"} {
		k, v, _ := strings.Cut(kv, "=")
		if !slices.Contains(u[k], v) {
			t.Errorf("gpuhost-selftest.service: want %s, have %v", kv, u[k])
		}
	}
	rules, err := os.ReadFile("udev/90-gpuhost-selftest.rules")
	if err != nil {
		t.Fatal(err)
	}
	var rule string
	for _, l := range strings.Split(string(rules), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			if rule != "" {
				t.Fatalf("more than one rule: %q and %q", rule, l)
			}
			rule = l
		}
	}
	for _, want := range []string{`ACTION=="add"`, `SUBSYSTEM=="block"`, `ENV{ID_SERIAL}=="gpuhost-selftest"`, `TAG+="systemd"`, `ENV{SYSTEMD_WANTS}+="gpuhost-selftest.service"`} {
		if !strings.Contains(rule, want) {
			t.Errorf("the udev rule lacks %s: %q", want, rule)
		}
	}
	script, err := os.ReadFile("scripts/gpuhost-selftest")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), "/dev/disk/by-id/virtio-gpuhost-selftest") {
		t.Error("the selftest script does not write to the disk the rule matches")
	}
	creds := unit(t, "systemd/gpuhost-agent-credentials.service")
	if !slices.Contains(creds["Unit.Before"], "gpuhost-agentd.service") || !slices.Contains(creds["Install.WantedBy"], "gpuhost-agentd.service") {
		t.Errorf("gpuhost-agent-credentials.service must run before the agent that reads what it makes: %v", creds)
	}
}
