package gpu

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// In a template, an empty hardening block is the whole hardening with its
// defaults, and no block is none: the block is decoded as Packer decodes
// it, through the provisioner's HCL2 spec.
func TestHardeningBlockInHCL(t *testing.T) {
	spec := hcldec.ObjectSpec((&Provisioner{}).ConfigSpec())
	for _, c := range []struct {
		hcl  string
		want bool
	}{
		{"hardening {}\n", true},
		{"hardening {\n  firewall {\n    allowed_tcp_ports = [22, 9108]\n  }\n}\n", true},
		{"", false},
	} {
		f, diags := hclsyntax.ParseConfig([]byte(`driver {
  version = "535.261.03-1"
  source  = "debian"
}
`+c.hcl), "test.pkr.hcl", hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		val, diags := hcldec.Decode(f.Body, spec, nil)
		if diags.HasErrors() {
			t.Fatal(diags.Error())
		}
		var p Provisioner
		if err := p.Prepare(val); err != nil {
			t.Fatalf("%q: %v", c.hcl, err)
		}
		h := p.config.Hardening
		if (h != nil) != c.want {
			t.Errorf("%q: hardening %+v, want present %v", c.hcl, h, c.want)
			continue
		}
		if h != nil && (h.SSH.PermitRootLogin != "no" || len(h.Firewall.AllowedTCPPorts) == 0 || !p.config.DisableUnattendedUpgrades.True()) {
			t.Errorf("%q: defaults not applied: %+v", c.hcl, h)
		}
	}
}

// live adds the step that applies the hardening to the running host, last
// among the hardening steps; every check in it comes before anything is
// loaded, and sshd is reloaded after the rest. Without live (the
// gpuhost-rootfs builder's images) the step is not rendered at all.
func TestHardeningApplyLiveStep(t *testing.T) {
	live := renderCase(t, "ubuntu-22.04-cuda-repo-open-580-live")
	step := testutil.PlanStep(t, live, "hardening: apply live")
	if j, a, v := strings.Index(live, `step "hardening: journald"`), strings.Index(live, `step "hardening: apply live"`), strings.Index(live, `step "verify pins"`); j >= a || a >= v {
		t.Errorf("apply live at %d, want after the journald step (%d) and before verify pins (%d)", a, j, v)
	}
	order := []string{
		"/proc/1/root", "[ -d /run/systemd/system ] || die", "nft -c -f '/etc/nftables.conf'", "sshd -t -f /etc/ssh/sshd_config",
		"systemctl restart nftables.service", "nft list chain inet filter input", "systemctl restart auditd.service", "augenrules --load",
		"auditctl -l", "systemctl restart systemd-journald.service", "journalctl --flush", `kill -HUP "$sshd_pid"`,
	}
	last := -1
	for _, want := range order {
		i := strings.Index(step, want)
		if i < 0 {
			t.Errorf("the step lacks %q:\n%s", want, step)
			continue
		}
		if i < last {
			t.Errorf("%q comes before what precedes it in %v", want, order)
		}
		last = i
	}
	// The instance's host keys stay: gpuhost-scan logs in after the plan,
	// and OpenSSH re-executes sshd for each connection, which reads them.
	if strings.Contains(live, "rm -f /etc/ssh/ssh_host_") {
		t.Error("the live plan removes the host keys")
	}
	// Each command that changes the host fails the build naming itself.
	for _, l := range lines(step) {
		l = strings.TrimSpace(l)
		for _, cmd := range []string{"systemctl restart ", "augenrules --load", "journalctl --flush", "kill -HUP", "nft -f", "nft -c -f"} {
			if strings.HasPrefix(l, cmd) && !strings.Contains(l, `|| die "live: `) {
				t.Errorf("%q does not stop the build when it fails", l)
			}
		}
	}
	for _, name := range planCases {
		if !strings.HasSuffix(name, "-live") && strings.Contains(renderCase(t, name), "apply live") {
			t.Errorf("%s is not live, yet its plan applies the hardening to the running host", name)
		}
	}

	// Parts left out are neither applied nor waited for: without auditd and
	// journald the step needs no systemd.
	cfg := decodeHardening(t, `{"ssh": {"host_keys": "keep"}, "audit": {"skip": true}, "journald": {"skip": true}}`)
	cfg.Live = true
	plan, err := RenderPlan(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	step = testutil.PlanStep(t, plan, "hardening: apply live")
	for _, absent := range []string{"auditd", "augenrules", "journald", "[ -d /run/systemd/system ] || die"} {
		if strings.Contains(step, absent) {
			t.Errorf("with audit and journald skipped the step still has %q", absent)
		}
	}
}

// live is refused where it would reach the build machine (the rootfs
// builder's chroot) or remove the host keys the build logs in with again.
func TestHardeningLiveIsRefusedWhereItCannotWork(t *testing.T) {
	for _, c := range []struct {
		name, extra, want string
	}{
		{"rootfs builder", `"packer_builder_type": "gpuhost-rootfs", "hardening": {"ssh": {"host_keys": "keep"}}`, "live: the gpuhost-rootfs builder's target is a chroot"},
		{"host keys removed", `"hardening": {}`, "hardening.ssh.host_keys: first_boot removes the host keys of the running host"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := DecodeJSON([]byte(`{` + debianBase + `, "live": true, ` + c.extra + `}`))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
	// The same configurations without live are fine, and so is live on a
	// cloud builder that keeps the keys.
	for _, ok := range []string{
		`"packer_builder_type": "gpuhost-rootfs", "hardening": {}`,
		`"packer_builder_type": "amazon-ebs", "live": true, "hardening": {"ssh": {"host_keys": "keep"}}`,
		`"live": true, "hardening": {"ssh": {"skip": true}}`,
	} {
		if _, err := DecodeJSON([]byte(`{` + debianBase + `, ` + ok + `}`)); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
}

// The live step refuses a chroot, the gpuhost-rootfs builder's kind of
// target, before it changes anything, and goes on on a host's own /. Both
// run for real in a pid and mount namespace of the test's own, whose PID 1
// is the test's shell: once chrooted into a tree sharing the machine's /usr
// (read-only) with that namespace's /proc mounted, once not.
func TestHardeningApplyLiveRefusesAChroot(t *testing.T) {
	testutil.Root(t)
	unshare := testutil.Tool(t, "unshare", "util-linux")
	cfg := decodeHardening(t, `{"tls": {"skip": true}, "ssh": {"skip": true}, "firewall": {"skip": true}, "audit": {"skip": true}, "sudo": {"skip": true}, "journald": {"skip": true}}`)
	cfg.Live = true
	plan, err := RenderPlan(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	preamble, _, _ := strings.Cut(plan, "\nstep \"")
	script := preamble + "\nstep 'hardening: apply live'\n" + testutil.PlanStep(t, plan, "hardening: apply live") + "\necho 'nothing refused'\n"
	root := t.TempDir()
	for _, d := range []string{"usr", "proc", "tmp"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []string{"bin", "lib", "lib64", "sbin"} {
		if err := os.Symlink("usr/"+l, filepath.Join(root, l)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(root, "plan.sh"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	setup := `set -e
mount --make-rprivate /
mount -o bind,ro /usr "$1/usr"
mount -t proc proc "$1/proc"
rc=0
if [ "$2" = chroot ]; then
	TMPDIR=/tmp chroot "$1" /bin/sh /plan.sh || rc=$?
else
	TMPDIR="$1/tmp" /bin/sh "$1/plan.sh" || rc=$?
fi
exit "$rc"`
	for _, c := range []struct {
		mode, want string
		fails      bool
	}{
		{"chroot", "gpuhost-gpu: live: the plan runs in a chroot, whose kernel is the build machine's; nothing was applied", true},
		{"host", "nothing refused", false},
	} {
		out, err := exec.Command(unshare, "--mount", "--pid", "--fork", "--mount-proc", "/bin/sh", "-c", setup, "sh", root, c.mode).CombinedOutput()
		if (err != nil) != c.fails || !strings.Contains(string(out), c.want) {
			t.Errorf("%s: err = %v, want failing %v with %q; output:\n%s", c.mode, err, c.fails, c.want, out)
		}
	}
}
