package files_test

import (
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan"
	"github.com/gpuhost/gpuhost/target"
	"github.com/gpuhost/gpuhost/target/collector"
	"github.com/gpuhost/gpuhost/target/domains"
)

// The differential test: the same tree judged by OpenSCAP, with
// ComplianceAsCode's content for CIS Ubuntu 22.04 Level 1 Server, and by
// the files checks, rule by rule.
const (
	dataStream = "/usr/share/xml/scap/ssg/content/ssg-ubuntu2204-ds.xml"
	ovalFile   = "/usr/share/xml/scap/ssg/content/ssg-ubuntu2204-oval.xml"
	profile    = "xccdf_org.ssgproject.content_profile_cis_level1_server"
	rulePrefix = "xccdf_org.ssgproject.content_rule_"
)

// benchmarkPaths are the files of the file_owner_, file_groupowner_ and
// file_permissions_ rules, by the rules' suffix.
var benchmarkPaths = map[string]string{
	"etc_passwd": "/etc/passwd", "etc_shadow": "/etc/shadow", "etc_group": "/etc/group", "etc_gshadow": "/etc/gshadow",
	"backup_etc_passwd": "/etc/passwd-", "backup_etc_shadow": "/etc/shadow-",
	"backup_etc_group": "/etc/group-", "backup_etc_gshadow": "/etc/gshadow-",
	"crontab": "/etc/crontab", "cron_hourly": "/etc/cron.hourly", "cron_daily": "/etc/cron.daily",
	"cron_weekly": "/etc/cron.weekly", "cron_monthly": "/etc/cron.monthly", "cron_d": "/etc/cron.d",
	"cron_allow": "/etc/cron.allow", "at_allow": "/etc/at.allow", "etc_issue": "/etc/issue", "etc_motd": "/etc/motd",
	"grub2_cfg": "/boot/grub/grub.cfg", "sshd_config": "/etc/ssh/sshd_config",
}

// mapping is which check, and which of its findings' subjects, decides
// each rule; an empty subject means the whole check does.
type decider struct{ check, subject string }

func mapping() map[string]decider {
	m := map[string]decider{
		"file_permissions_sshd_private_key":               {check: "GH-FS-004"},
		"file_permissions_sshd_pub_key":                   {check: "GH-FS-005"},
		"dir_perms_world_writable_sticky_bits":            {check: "GH-FS-006"},
		"file_permissions_unauthorized_world_writable":    {check: "GH-FS-007"},
		"no_files_unowned_by_user":                        {check: "GH-FS-008"},
		"file_permissions_home_directories":               {check: "GH-FS-009"},
		"accounts_user_interactive_home_directory_exists": {check: "GH-FS-010"},
		"accounts_user_dot_user_ownership":                {check: "GH-FS-011"},
		"accounts_user_dot_group_ownership":               {check: "GH-FS-012"},
		"no_netrc_files":                                  {check: "GH-FS-013"},
		"no_rsh_trust_files":                              {check: "GH-FS-014"},
	}
	for suffix, p := range benchmarkPaths {
		m["file_owner_"+suffix] = decider{check: "GH-FS-001", subject: p}
		m["file_permissions_"+suffix] = decider{check: "GH-FS-003", subject: p}
		// The profile has no group rule for grub.cfg.
		if suffix != "grub2_cfg" {
			m["file_groupowner_"+suffix] = decider{check: "GH-FS-002", subject: p}
		}
	}
	return m
}

// node is one entry of a tree: a file, a directory (name ending in /) or
// a symlink, its mode and its owner. A mode left 0 is 0644 for a file and
// 0755 for a directory; zero is mode 0000.
type node struct {
	mode     os.FileMode
	uid, gid int
	data     string
	link     string
}

const zero = os.ModeTemporary

func writeTree(t *testing.T, nodes map[string]node) string {
	t.Helper()
	dir := t.TempDir()
	names := make([]string, 0, len(nodes))
	for name := range nodes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		n := nodes[name]
		p := filepath.Join(dir, strings.TrimSuffix(name, "/"))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch {
		case n.link != "":
			err = os.Symlink(n.link, p)
		case strings.HasSuffix(name, "/"):
			err = os.MkdirAll(p, 0o755)
		default:
			err = os.WriteFile(p, []byte(n.data), 0o644)
		}
		if err == nil {
			err = os.Lchown(p, n.uid, n.gid)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// Modes last, deepest first, so that no directory's mode stands in
	// the way of what goes into it.
	slices.Reverse(names)
	for _, name := range names {
		if n := nodes[name]; n.link == "" {
			mode := n.mode
			switch {
			case mode == zero:
				mode = 0
			case mode == 0 && strings.HasSuffix(name, "/"):
				mode = 0o755
			case mode == 0:
				mode = 0o644
			}
			if err := os.Chmod(filepath.Join(dir, strings.TrimSuffix(name, "/")), mode); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

const (
	passwd = "root:x:0:0:root:/root:/bin/bash\n" +
		"daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin\n" +
		"alice:x:1000:1000::/home/alice:/bin/bash\n" +
		"bob:x:1001:1001::/home/bob:/bin/bash\n" +
		"carol:x:1002:1002::/home/carol:/bin/bash\n" +
		"nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
	group = "root:x:0:\ndaemon:x:1:\nshadow:x:42:\nalice:x:1000:\nbob:x:1001:\ncarol:x:1002:\nnogroup:x:65534:\n"
	// dpkg's database, for the rules that apply where a package is
	// installed.
	dpkgStatus = "Package: grub2-common\nStatus: install ok installed\nArchitecture: amd64\nVersion: 2.06-2ubuntu7\n\n" +
		"Package: openssh-server\nStatus: install ok installed\nArchitecture: amd64\nVersion: 1:8.9p1-3ubuntu0.10\n\n" +
		"Package: cron\nStatus: install ok installed\nArchitecture: amd64\nVersion: 3.0pl1-137ubuntu3\n"
)

// ubuntu is what makes a tree Ubuntu 22.04 to OpenSCAP's platform checks
// and to gpuhost, with the given passwd.
func ubuntu(passwd string) map[string]node {
	return map[string]node{
		"etc/lsb-release":       {data: "DISTRIB_ID=Ubuntu\nDISTRIB_RELEASE=22.04\nDISTRIB_CODENAME=jammy\n"},
		"etc/os-release":        {data: "NAME=\"Ubuntu\"\nID=ubuntu\nVERSION_ID=\"22.04\"\nVERSION_CODENAME=jammy\n"},
		"var/lib/dpkg/status":   {data: dpkgStatus},
		"etc/passwd":            {data: passwd, mode: 0o644},
		"etc/group":             {data: group, mode: 0o644},
		"tmp/":                  {mode: os.ModeSticky | 0o777},
		"root/":                 {mode: 0o700},
		"usr/bin/true":          {mode: 0o755},
		"var/log/":              {mode: 0o755},
		"home/":                 {mode: 0o755},
		"etc/ssh/":              {mode: 0o755},
		"boot/grub/":            {mode: 0o755},
		"var/lib/dpkg/":         {mode: 0o755},
		"etc/ssh/ssh_config.d/": {mode: 0o755},
	}
}

func merge(base map[string]node, more map[string]node) map[string]node {
	for k, v := range more {
		base[k] = v
	}
	return base
}

// goodFiles are the benchmark's files as the profile wants them.
func goodFiles() map[string]node {
	return map[string]node{
		"etc/passwd-": {data: passwd, mode: 0o644}, "etc/group-": {data: group, mode: 0o644},
		"etc/shadow": {mode: zero, gid: 42}, "etc/shadow-": {mode: zero, gid: 42},
		"etc/gshadow": {mode: zero}, "etc/gshadow-": {mode: zero},
		"etc/crontab": {mode: 0o600}, "etc/cron.hourly/": {mode: 0o700}, "etc/cron.daily/": {mode: 0o700},
		"etc/cron.weekly/": {mode: 0o700}, "etc/cron.monthly/": {mode: 0o700}, "etc/cron.d/": {mode: 0o700},
		"etc/cron.allow": {mode: 0o640}, "etc/at.allow": {mode: 0o600},
		"etc/issue": {mode: 0o644}, "etc/motd": {mode: 0o444}, "boot/grub/grub.cfg": {mode: 0o600},
		"etc/ssh/sshd_config": {mode: 0o600}, "etc/ssh/ssh_host_ed25519_key": {mode: 0o600},
		"etc/ssh/ssh_host_ed25519_key.pub": {mode: 0o644},
	}
}

// goodTree holds every file as the profile wants it.
func goodTree(t *testing.T) string {
	return writeTree(t, merge(merge(ubuntu(passwd), goodFiles()), map[string]node{
		"home/alice/": {mode: 0o750, uid: 1000, gid: 1000}, "home/alice/.bashrc": {uid: 1000, gid: 1000},
		"home/alice/.config/": {mode: 0o700, uid: 1000, gid: 1000}, "home/alice/.config/.x": {uid: 1000, gid: 1000},
		"home/bob/": {mode: 0o700, uid: 1001, gid: 1001}, "home/bob/.profile": {uid: 1001, gid: 1001},
		"home/carol/": {mode: 0o700, uid: 1002, gid: 1002},
		"var/tmp/":    {mode: os.ModeSticky | 0o777},
	}))
}

// quirkTree holds what OpenSCAP's tests decide in ways their titles do
// not say: a dot file passes when any interactive user owns it, and fails
// when its uid or its gid is two interactive users'; two users sharing a
// home fail the homes' existence; a world-writable directory in /proc is
// judged, a world-writable file there is not.
func quirkTree(t *testing.T) string {
	users := "root:x:0:0:root:/root:/bin/bash\n" +
		"alice:x:1000:1000::/home/alice:/bin/bash\n" +
		"dave:x:1004:1000::/home/dave:/bin/bash\n" +
		"erin:x:1005:1005::/home/alice:/bin/bash\n" +
		"frank:x:1000:1006::/home/frank:/bin/bash\n"
	return writeTree(t, merge(merge(ubuntu(users), goodFiles()), map[string]node{
		"etc/passwd-":         {data: users, mode: 0o644},
		"home/alice/":         {mode: 0o750, uid: 1000, gid: 1000},
		"home/alice/.bashrc":  {uid: 1005, gid: 1005},
		"home/dave/":          {mode: 0o700, uid: 1004, gid: 1000},
		"home/dave/.profile":  {uid: 1004, gid: 1000},
		"home/frank/":         {mode: 0o700, uid: 1000, gid: 1006},
		"home/frank/.profile": {uid: 1000, gid: 1006},
		"proc/x/":             {mode: 0o777},
		"sys/y":               {mode: 0o666},
	}))
}

// badTree breaks every rule.
func badTree(t *testing.T) string {
	shared := passwd + "bob2:x:1003:1003::/home/alice:/bin/bash\n"
	return writeTree(t, merge(ubuntu(shared), map[string]node{
		"etc/passwd":  {data: shared, mode: 0o666, uid: 1000, gid: 1000},
		"etc/passwd-": {data: passwd, mode: 0o755, uid: 1, gid: 1}, "etc/group": {data: group, mode: 0o664, uid: 1, gid: 42},
		"etc/group-": {data: group, mode: 0o646, uid: 1000, gid: 1000},
		"etc/shadow": {mode: 0o640, uid: 1000, gid: 0}, "etc/shadow-": {mode: 0o400, uid: 1, gid: 1},
		"etc/gshadow": {mode: 0o640, uid: 1, gid: 42}, "etc/gshadow-": {mode: os.ModeSetuid, uid: 1000, gid: 1000},
		"etc/crontab": {mode: 0o644, uid: 1000, gid: 1000}, "etc/cron.hourly/": {mode: 0o755, uid: 1, gid: 1},
		"etc/cron.daily/": {mode: 0o701, uid: 1000, gid: 5}, "etc/cron.weekly/": {mode: 0o770, uid: 1, gid: 1000},
		"etc/cron.monthly/": {mode: os.ModeSticky | 0o700, uid: 1000, gid: 1}, "etc/cron.d/": {mode: 0o750, uid: 1, gid: 1},
		"etc/cron.allow": {mode: 0o644, uid: 1000, gid: 1000}, "etc/at.allow": {mode: 0o660, uid: 1, gid: 1},
		"etc/issue": {mode: 0o666, uid: 1000, gid: 1000}, "etc/motd": {mode: 0o664, uid: 1, gid: 1},
		"boot/grub/grub.cfg": {mode: 0o644, uid: 1000, gid: 1000}, "etc/ssh/sshd_config": {mode: 0o644, uid: 1000, gid: 1000},
		"etc/ssh/ssh_host_rsa_key": {mode: 0o640}, "etc/ssh/ssh_host_ed25519_key": {mode: 0o600, uid: 1000},
		"etc/ssh/ssh_host_rsa_key.pub": {mode: 0o664},
		// bob's home is missing; bob2 shares alice's.
		"home/alice/":       {mode: 0o755, uid: 1000, gid: 1000},
		"home/alice/.netrc": {mode: 0o600, uid: 1000, gid: 1000},
		// Root's, and alice's primary group is alice's alone only by gid.
		"home/alice/.bashrc":       {},
		"home/alice/sub/.x":        {uid: 1003, gid: 1003},
		"home/carol/":              {mode: 0o700, uid: 1002, gid: 1002},
		"home/carol/.bash_history": {link: "/dev/null"},
		"opt/drop/":                {mode: 0o777},
		"opt/drop/run.sh":          {mode: 0o666},
		"opt/orphan":               {uid: 4242, gid: 4242},
		"root/.rhosts":             {},
		"etc/hosts.equiv":          {},
	}))
}

// edgeTree holds what the rules leave out: symlinks, missing files, a
// path that is not the directory a rule names, entries too deep, and
// OVAL's own exceptions. Only the symlinked home fails (its item is the
// link, not a directory).
func edgeTree(t *testing.T) string {
	return writeTree(t, merge(ubuntu(passwd), map[string]node{
		// What the symlinks lead to would fail every rule that followed
		// them, short of being world-writable.
		"etc/passwd.real": {data: passwd, mode: 0o664, uid: 1000, gid: 1000},
		"etc/passwd":      {link: "passwd.real"},
		"etc/passwd-":     {link: "passwd"},
		// /etc/shadow, gshadow and their backups, grub.cfg and
		// sshd_config are missing.
		"etc/cron.d":                     {mode: 0o775, uid: 1000, gid: 1000},
		"srv/crondaily/":                 {mode: 0o775, uid: 1000, gid: 1000},
		"etc/cron.daily":                 {link: "../srv/crondaily"},
		"etc/crontab":                    {link: "../srv/crontab"},
		"srv/crontab":                    {mode: 0o664, uid: 1000, gid: 1000},
		"etc/ssh/moduli_key/":            {mode: os.ModeSticky | 0o777, uid: 1000, gid: 1000},
		"etc/ssh/ssh_host_rsa_key":       {link: "../../srv/key"},
		"srv/key":                        {mode: 0o644, uid: 1000, gid: 1000},
		"etc/ssh/old.pub/":               {mode: os.ModeSticky | 0o777},
		"opt/link":                       {link: "/etc/passwd"},
		"opt/byuid4343/":                 {uid: 4343, gid: 4343},
		"proc/x/":                        {mode: 0o755},
		"proc/x/wwf":                     {mode: 0o666},
		"srv/alice/":                     {mode: 0o700, uid: 1000, gid: 1000},
		"srv/alice/.bashrc":              {uid: 1000, gid: 1000},
		"srv/alice/.bash_history":        {link: "/dev/null", uid: 1000, gid: 1000},
		"srv/alice/.config/sub/.toodeep": {},
		"home/alice":                     {link: "../srv/alice"},
		"home/bob/":                      {mode: 0o700, uid: 1001, gid: 1001},
		"home/carol/":                    {mode: 0o750, uid: 1002, gid: 1002},
		"home/x/y/.rhosts":               {},
		"home/x/y/.netrc":                {},
		"root/.netrc":                    {},
	}))
}

// ruleResults runs OpenSCAP over dir for the rules given and returns each
// rule's result.
func ruleResults(t *testing.T, oscap, dir string, rules []string) map[string]string {
	t.Helper()
	args := []string{dir, "xccdf", "eval", "--profile", profile}
	for _, r := range rules {
		args = append(args, "--rule", rulePrefix+r)
	}
	results := filepath.Join(t.TempDir(), "results.xml")
	args = append(args, "--results", results, dataStream)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, oscap, args...)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	// oscap exits 2 when a rule fails: that is a result, not an error.
	if ee, ok := err.(*exec.ExitError); err != nil && (!ok || ee.ExitCode() != 2) {
		t.Fatalf("oscap-chroot %s: %v\n%s", dir, err, out)
	}
	data, err := os.ReadFile(results)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Results []struct {
			IDRef  string `xml:"idref,attr"`
			Result string `xml:"result"`
		} `xml:"TestResult>rule-result"`
	}
	if err := xml.Unmarshal(data, &doc); err != nil {
		t.Fatalf("parsing %s: %v", results, err)
	}
	got := map[string]string{}
	for _, r := range doc.Results {
		got[strings.TrimPrefix(r.IDRef, rulePrefix)] = r.Result
	}
	return got
}

// definitionResult evaluates a rule's OVAL definition alone, outside the
// XCCDF rule and its platform: true is a pass.
func definitionResult(t *testing.T, oscap, dir, rule string) string {
	t.Helper()
	id := "oval:ssg-" + rule + ":def:1"
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, oscap, dir, "oval", "eval", "--id", id, ovalFile)
	cmd.Dir = t.TempDir()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("oscap-chroot oval eval %s: %v\n%s", id, err, out)
	}
	switch {
	case strings.Contains(string(out), "Definition "+id+": true"):
		return "pass"
	case strings.Contains(string(out), "Definition "+id+": false"):
		return "fail"
	}
	t.Fatalf("oscap-chroot oval eval %s: no result in\n%s", id, out)
	return ""
}

// verdicts collects dir as a rootfs with the access and files collectors
// and judges it with the default pack and params.
func verdicts(t *testing.T, dir string) map[string]reports.Result {
	t.Helper()
	ctx := context.Background()
	var cs []collector.Collector
	for _, c := range domains.Collectors() {
		if c.Name() == "access" || c.Name() == "files" {
			cs = append(cs, c)
		}
	}
	f, err := target.Rootfs(ctx, dir, target.Options{Collectors: cs})
	if err != nil {
		t.Fatal(err)
	}
	for name, c := range f.Collectors {
		if c.Status != "ok" {
			t.Fatalf("collector %s: %s %s", name, c.Status, c.Reason)
		}
	}
	e, err := scan.Pack{}.Engine(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := scan.New(e).Facts(ctx, f)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]reports.Result{}
	for _, r := range rep.Results {
		if strings.HasPrefix(r.ID, "GH-FS-") {
			out[r.ID] = r
		}
	}
	return out
}

// verdict is what the check says of one rule: its status, or for a
// subject, fail when a finding names it and pass when none does.
func verdict(r reports.Result, subject string) (string, string) {
	if subject == "" || (r.Status != reports.StatusPass && r.Status != reports.StatusFail) {
		return string(r.Status), strings.Join(r.Messages, "; ")
	}
	for _, f := range r.Findings {
		if f.Subject == subject {
			return "fail", f.Message
		}
	}
	return "pass", ""
}

func TestAgreesWithOpenSCAP(t *testing.T) {
	testutil.Root(t)
	oscap := testutil.Tool(t, "oscap-chroot", "openscap-utils")
	testutil.File(t, dataStream, "ssg-debderived")
	testutil.File(t, ovalFile, "ssg-debderived")
	m := mapping()
	rules := make([]string, 0, len(m))
	for r := range m {
		rules = append(rules, r)
	}
	slices.Sort(rules)
	trees := []struct {
		name string
		make func(*testing.T) string
	}{{"good", goodTree}, {"bad", badTree}, {"edge", edgeTree}, {"quirks", quirkTree}}
	agreed, compared := 0, 0
	var report []string
	for _, tree := range trees {
		dir := tree.make(t)
		theirs := ruleResults(t, oscap, dir, rules)
		ours := verdicts(t, dir)
		for _, rule := range rules {
			d := m[rule]
			want, how := theirs[rule], "rule"
			if want == "notapplicable" && strings.HasSuffix(rule, "grub2_cfg") {
				// The grub2 rules apply where grub2-common is installed,
				// which OpenSCAP asks dpkginfo, and oscap-chroot's
				// dpkginfo reads the dpkg database of the machine it runs
				// on, not the tree's: there, the rule's own definition
				// is what says.
				want, how = definitionResult(t, oscap, dir, rule), "definition"
			}
			got, why := verdict(ours[d.check], d.subject)
			switch {
			case want == got:
				agreed++
			default:
				t.Errorf("%s tree, %s: OpenSCAP %q, gpuhost %s %s %q (%s)", tree.name, rule, want, d.check, d.subject, got, why)
			}
			compared++
			report = append(report, fmt.Sprintf("%s %s: OpenSCAP's %s %s, gpuhost %s %s %s", tree.name, rule, how, want, d.check, d.subject, got))
		}
	}
	t.Logf("%d of %d rule results agree over %d trees:\n%s", agreed, compared, len(trees), strings.Join(report, "\n"))
}
