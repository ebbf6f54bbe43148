package gpu

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan"
	"github.com/gpuhost/gpuhost/target"
)

// baselineChecks are the checks the baseline answers, with the default
// params.
var baselineChecks = []string{"GH-IAM-007", "GH-KRN-001", "GH-KRN-002", "GH-KRN-003", "GH-FS-001", "GH-FS-002", "GH-FS-003"}

// The baseline step, run twice as the plan runs it, in a chroot of a tree
// with Debian's shape of the files it edits (the build machine's /usr
// mounted read-only under it, so the step's own sed, awk, chown and chmod
// do the work): the default pack fails every baseline check on the tree
// before and passes each after. The step adds no mode bit, keeps a
// commented login.defs line, and leaves a link and its target alone.
func TestHardeningBaselineStep(t *testing.T) {
	testutil.Root(t)
	unshare := testutil.Tool(t, "unshare", "util-linux")
	step := testutil.PlanStep(t, renderCase(t, "debian-12-debian-535"), "hardening: baseline")

	root := t.TempDir()
	type file struct {
		body     string
		mode     os.FileMode
		uid, gid int
	}
	files := map[string]file{
		"etc/passwd":          {"root:x:0:0:root:/root:/bin/bash\nsshd:x:100:65534::/run/sshd:/usr/sbin/nologin\n", 0o644, 0, 0},
		"etc/group":           {"root:x:0:\nshadow:x:42:\nnogroup:x:65534:\n", 0o644, 0, 0},
		"etc/shadow":          {"root:*:19700:0:99999:7:::\nsshd:!:19700::::::\n", 0o640, 0, 42},
		"etc/gshadow":         {"root:*::\nshadow:*::\n", 0o640, 0, 42},
		"etc/login.defs":      {"# PASS_MAX_DAYS 1 in a comment stays a comment\nMAIL_DIR\t/var/mail\nUMASK\t\t022\nPASS_MAX_DAYS\t99999\nPASS_MIN_DAYS\t0\nPASS_WARN_AGE\t7\n", 0o644, 0, 0},
		"etc/crontab":         {"SHELL=/bin/sh\n", 0o644, 1000, 0},
		"etc/ssh/sshd_config": {"Include /etc/ssh/sshd_config.d/*.conf\n", 0o644, 0, 0},
		"etc/issue":           {"Debian GNU/Linux 12 \\n \\l\n", 0o600, 0, 0},
		"boot/grub/grub.cfg":  {"set default=0\n", 0o444, 0, 0},
		"etc/motd.real":       {"welcome\n", 0o666, 0, 0},
	}
	for name, f := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(f.body), f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, f.mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(p, f.uid, f.gid); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"etc/cron.d", "etc/cron.daily", "etc/cron.hourly", "etc/cron.weekly", "etc/cron.monthly", "usr", "tmp"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{"etc/motd": "motd.real", "bin": "usr/bin", "sbin": "usr/sbin", "lib": "usr/lib", "lib64": "usr/lib64"}
	for name, to := range links {
		if err := os.Symlink(to, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	// The distributions' awk is an alternative, linked through /etc.
	awk, err := filepath.EvalSymlinks("/usr/bin/awk")
	if err != nil {
		t.Fatalf("awk, which every Debian and Ubuntu install has (mawk): %v", err)
	}
	if err := os.MkdirAll(filepath.Join(root, "etc/alternatives"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(awk, filepath.Join(root, "etc/alternatives/awk")); err != nil {
		t.Fatal(err)
	}
	if cache, err := os.ReadFile("/etc/ld.so.cache"); err == nil {
		if err := os.WriteFile(filepath.Join(root, "etc/ld.so.cache"), cache, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	before := baselineVerdicts(t, root)
	for _, id := range baselineChecks {
		if before[id].Status != reports.StatusFail {
			t.Errorf("before the step, %s is %s; want fail (the tree is a distribution's, unhardened)", id, before[id].Status)
		}
	}

	if err := os.WriteFile(filepath.Join(root, "tmp/step.sh"), []byte("set -eu\ndie() { echo \"die: $*\" >&2; exit 1; }\n"+step+step), 0o644); err != nil {
		t.Fatal(err)
	}
	script := `set -eu
mount --make-rprivate /
mount --bind /usr "$1/usr"
mount -o remount,bind,ro "$1/usr"
chroot "$1" /bin/sh /tmp/step.sh`
	testutil.Run(t, time.Minute, unshare, "--mount", "/bin/sh", "-c", script, "sh", root)

	after := baselineVerdicts(t, root)
	for _, id := range baselineChecks {
		if r := after[id]; r.Status != reports.StatusPass {
			t.Errorf("after the step, %s is %s: %q", id, r.Status, r.Messages)
		}
	}
	defs, err := os.ReadFile(filepath.Join(root, "etc/login.defs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# PASS_MAX_DAYS 1 in a comment stays a comment\n", "MAIL_DIR\t/var/mail\n", "UMASK\t027\n", "PASS_MAX_DAYS\t365\n", "PASS_MIN_DAYS\t1\n"} {
		if !strings.Contains(string(defs), want) {
			t.Errorf("login.defs lacks %q:\n%s", want, defs)
		}
	}
	if n := strings.Count(string(defs), "PASS_MAX_DAYS\t"); n != 1 {
		t.Errorf("login.defs sets PASS_MAX_DAYS %d times after two runs:\n%s", n, defs)
	}
	for name, want := range map[string]os.FileMode{
		"etc/issue": 0o600, "boot/grub/grub.cfg": 0o400, "etc/shadow": 0, "etc/crontab": 0o600, "etc/cron.d": 0o700, "etc/motd.real": 0o666,
	} {
		info, err := os.Stat(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != want {
			t.Errorf("/%s has mode %04o; want %04o", name, info.Mode().Perm(), want)
		}
	}
}

// The baseline's defaults are the default params, and the files it sets
// are named as the plan can write them into shell words: a path, or a
// glob the shell expands, of plain characters.
func TestHardeningBaselineDefaults(t *testing.T) {
	b := decodeHardening(t, `{}`).Hardening.Baseline
	pack := defaultPack()
	want := map[string]string{"PASS_MAX_DAYS": "365", "PASS_MIN_DAYS": "1", "PASS_WARN_AGE": "7", "UMASK": "027"}
	if !maps.Equal(b.LoginDefs, want) {
		t.Errorf("login_defs %v; want %v, inside the params' bounds", b.LoginDefs, want)
	}
	if !maps.Equal(b.Sysctl, pack.Sysctl) || len(b.Sysctl) == 0 {
		t.Errorf("sysctl %v; want the params' sysctl_values %v", b.Sysctl, pack.Sysctl)
	}
	if !slices.Equal(b.DisabledModules, pack.DisabledModules) || len(b.DisabledModules) == 0 {
		t.Errorf("disabled_modules %v; want the params' kernel_modules_disabled %v", b.DisabledModules, pack.DisabledModules)
	}
	plain := regexp.MustCompile(`^/[A-Za-z0-9._+/*?-]*$`)
	files := baselineFiles(pack)
	if len(files) == 0 {
		t.Fatal("no files from the params' files_owner, files_group and files_mode")
	}
	for _, f := range files {
		if !plain.MatchString(f.Path) {
			t.Errorf("the params name %q, which the plan cannot write as a shell word", f.Path)
		}
	}
}

// baselineVerdicts collects root as a rootfs and judges it with the
// default pack and params: the baseline checks' results, by id.
func baselineVerdicts(t *testing.T, root string) map[string]reports.Result {
	t.Helper()
	ctx := context.Background()
	f, err := target.Rootfs(ctx, root, target.Options{})
	if err != nil {
		t.Fatal(err)
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
		out[r.ID] = r
	}
	return out
}
