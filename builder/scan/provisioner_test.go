package scan

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	sshcomm "github.com/hashicorp/packer-plugin-sdk/sdk-internals/communicator/ssh"
	"golang.org/x/crypto/ssh"

	"github.com/gpuhost/gpuhost/builder/internal/evaluation"
	"github.com/gpuhost/gpuhost/containers/trivy"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/reports"
)

const (
	hardened = "../../cmd/gpuhost/testdata/rootfs-hardened"
	weak     = "../../cmd/gpuhost/testdata/rootfs-weak"
	params   = "../../cmd/gpuhost/testdata/params-demo.yaml"
	// asRoot runs the CLI without sudo, which the test's root login does
	// not need; the default command is run by TestScanHostOverSSH.
	asRoot = `'{{.Path}}' {{.Args}} > '{{.Output}}'`
)

// bakedManifest stands in for what the gpuhost-gpu provisioner writes, as
// in the gate's tests: the manifest checks want one.
const bakedManifest = `{"schema":"gpuhost.manifest/v1","pins":{"packages":[],"ngc_images":[]},"packages":[],"config_files":[],"build":{"template":"scan-test"}}`

var lean struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if lean.dir != "" {
		os.RemoveAll(lean.dir)
	}
	os.Exit(code)
}

// leanCLI builds the lean gpuhost CLI once, as `make build` builds
// bin/gpuhost-agent: what a template's gpuhost_binary names.
func leanCLI(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the lean CLI and runs it over ssh; make test runs this")
	}
	lean.once.Do(func() {
		lean.dir, lean.err = os.MkdirTemp("", "gpuhost-scan-test-")
		if lean.err != nil {
			return
		}
		lean.path = filepath.Join(lean.dir, "gpuhost-agent")
		out, err := exec.Command("go", "build", "-trimpath", "-tags", "lean", "-o", lean.path, "../../cmd/gpuhost").CombinedOutput()
		if err != nil {
			lean.err = fmt.Errorf("go build -tags lean: %v\n%s", err, out)
		}
	})
	if lean.err != nil {
		t.Fatal(lean.err)
	}
	return lean.path
}

// instance is a build instance as Packer reaches one: Debian's sshd,
// alone in a network namespace (so that `facts host` there sees its
// listeners and firewall, not the test machine's), logged into as root with
// a key made for the test, through the SDK's own ssh communicator.
type instance struct {
	comm packersdk.Communicator
	sshd *testutil.Proc
}

func startInstance(t *testing.T, sftp bool) *instance {
	t.Helper()
	testutil.Root(t)
	sshd := testutil.Tool(t, "sshd", "openssh-server")
	keygen := testutil.Tool(t, "ssh-keygen", "openssh-client")
	unshare := testutil.Tool(t, "unshare", "util-linux")
	netns := testutil.Netns(t)
	dir := t.TempDir()
	hostKey := filepath.Join(dir, "host_ed25519")
	testutil.Run(t, 30*time.Second, keygen, "-q", "-N", "", "-t", "ed25519", "-f", hostKey)
	signer, authorized := clientKey(t, dir)
	// Port 22 is free: the namespace has nothing else.
	conf := filepath.Join(dir, "sshd_config")
	config := fmt.Sprintf(`ListenAddress 127.0.0.1:22
HostKey %s
AuthorizedKeysFile %s
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
Subsystem sftp /usr/lib/openssh/sftp-server
`, hostKey, authorized)
	if err := os.WriteFile(conf, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	argv := append(netns, unshare)
	argv = append(argv, testutil.PrivateRun(t.TempDir(), sshd, "-D", "-e", "-f", conf, "-o", "PidFile=none")...)
	p := testutil.Start(t, exec.Command(argv[0], argv[1:]...))
	p.WaitLine(t, 20*time.Second, "Server listening on 127.0.0.1 port 22")
	return &instance{comm: connect(t, netns[len(netns)-1], signer, readHostKey(t, hostKey+".pub"), sftp, p), sshd: p}
}

// clientKey makes the key the test logs in with, and the authorized_keys
// file in dir that admits it.
func clientKey(t *testing.T, dir string) (ssh.Signer, string) {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	signer, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	authorized := filepath.Join(dir, "authorized_keys")
	if err := os.WriteFile(authorized, ssh.MarshalAuthorizedKey(signer.PublicKey()), 0o600); err != nil {
		t.Fatal(err)
	}
	return signer, authorized
}

// readHostKey reads the public half of the instance's host key, which the
// client pins.
func readHostKey(t *testing.T, file string) ssh.PublicKey {
	t.Helper()
	pub, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	pinned, _, _, _, err := ssh.ParseAuthorizedKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	return pinned
}

// connect logs in as root, with the SDK's ssh communicator, to the sshd p
// listening on 127.0.0.1:22 in the network namespace name.
func connect(t *testing.T, name string, signer ssh.Signer, pinned ssh.PublicKey, sftp bool, p *testutil.Proc) packersdk.Communicator {
	t.Helper()
	// Each connection's sshd leaves the listener's process group and keeps
	// its stderr: the connections close before the listener is stopped,
	// or stopping it would wait on them.
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	dial := func() (net.Conn, error) {
		c, err := testutil.DialNetns(name, "tcp", "127.0.0.1:22")
		if err == nil {
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
		return c, err
	}
	comm, err := sshcomm.New("127.0.0.1:22", &sshcomm.Config{
		SSHConfig: &ssh.ClientConfig{
			User:            "root",
			Auth:            []ssh.AuthMethod{ssh.PublicKeys(signer)},
			HostKeyCallback: ssh.FixedHostKey(pinned),
			Timeout:         10 * time.Second,
		},
		Connection:       dial,
		UseSftp:          sftp,
		HandshakeTimeout: 10 * time.Second,
	})
	if err != nil {
		t.Fatalf("ssh to the instance: %v\n%s", err, p.Output())
	}
	return comm
}

type ui struct {
	packersdk.Ui
	out *bytes.Buffer
}

func newUI() ui {
	var b bytes.Buffer
	return ui{&packersdk.BasicUi{Reader: strings.NewReader(""), Writer: &b, ErrorWriter: &b}, &b}
}

// run is one build's scan: the provisioner prepared with raw (the CLI,
// and a remote_folder and report_prefix of the test's own added), run
// against the instance. It returns the error, the build log, and the
// report prefix; the staged files must be gone from the instance
// whatever the outcome.
func (in *instance) run(t *testing.T, raw map[string]interface{}) (error, string, string) {
	t.Helper()
	remote := t.TempDir()
	prefix := filepath.Join(t.TempDir(), "out", "build")
	cfg := map[string]interface{}{"gpuhost_binary": leanCLI(t), "remote_folder": remote, "report_prefix": prefix}
	for k, v := range raw {
		cfg[k] = v
	}
	p := &Provisioner{Vulnerabilities: trivy.VulnerabilitiesCollector}
	if err := p.Prepare(cfg); err != nil {
		t.Fatal(err)
	}
	u := newUI()
	err := p.Provision(context.Background(), u, in.comm, nil)
	left, rerr := os.ReadDir(remote)
	if rerr != nil || len(left) > 0 {
		t.Errorf("the instance's %s still holds %v (%v) after the scan", remote, left, rerr)
	}
	return err, u.out.String(), prefix
}

// copyRootfs copies a sample rootfs, with the baked manifest, where the
// instance reads it.
func copyRootfs(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "rootfs")
	testutil.Run(t, time.Minute, "cp", "-a", src+"/.", dst+"/")
	if err := os.MkdirAll(filepath.Join(dst, "etc/gpuhost"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, "etc/gpuhost/manifest.json"), []byte(bakedManifest), 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// readReport reads the JSON report the scan wrote.
func readReport(t *testing.T, prefix string) *reports.Report {
	t.Helper()
	data, err := os.ReadFile(evaluation.ReportPath(prefix, "scan", "json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep reports.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	return &rep
}

func rootfsArgs(dir string) []string { return []string{"facts", "rootfs", dir} }

// TestScanOverSSH drives the provisioner through Packer's ssh communicator
// (scp transfers) against a real sshd: the verdicts follow the gate's
// settings, reports land at report_prefix, untrusted or oversized facts are
// errors naming the staged file, and nothing is left on the instance.
func TestScanOverSSH(t *testing.T) {
	leanCLI(t)
	in := startInstance(t, false)
	good, bad := copyRootfs(t, hardened), copyRootfs(t, weak)

	t.Run("passing instance", func(t *testing.T) {
		err, log, prefix := in.run(t, map[string]interface{}{
			"facts_args": rootfsArgs(good), "params": params, "reports": []string{"json", "sarif"},
			// The CLI arrives executable by its owner alone.
			"execute_command": `stat -c 'mode %a' '{{.Path}}' >&2 && ` + asRoot,
		})
		if err != nil {
			t.Fatalf("%v\n%s", err, log)
		}
		if !strings.Contains(log, "instance: mode 700") || !strings.Contains(log, "passes at fail_on high") {
			t.Errorf("log:\n%s", log)
		}
		rep := readReport(t, prefix)
		if rep.Target.Kind != facts.KindRootfs || rep.Target.Ref != good || rep.Summary.ByStatus[reports.StatusPass] == 0 {
			t.Errorf("report of %+v, summary %+v", rep.Target, rep.Summary)
		}
		if _, err := os.Stat(evaluation.ReportPath(prefix, "scan", "sarif")); err != nil {
			t.Error(err)
		}
		// The judged document is kept; the reports point at it by digest.
		judged, err := os.ReadFile(prefix + ".scan.facts.json")
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(judged); rep.FactsDigest != "sha256:"+hex.EncodeToString(sum[:]) {
			t.Errorf("facts_digest %s is not the saved facts' sha256", rep.FactsDigest)
		}
	})

	t.Run("failing instance", func(t *testing.T) {
		err, log, prefix := in.run(t, map[string]interface{}{"facts_args": rootfsArgs(bad), "params": params, "execute_command": asRoot})
		if err == nil || !strings.Contains(err.Error(), "the build instance "+bad+" fails policy at or above high") {
			t.Fatalf("err = %v\n%s", err, log)
		}
		if !strings.Contains(log, "gpuhost-scan: fail high GH-") {
			t.Errorf("the log does not list the failures:\n%s", log)
		}
		// Every report is written for the reviewer of the failed build.
		for _, f := range evaluation.DefaultReports("") {
			if _, err := os.Stat(evaluation.ReportPath(prefix, "scan", f)); err != nil {
				t.Errorf("%s report: %v", f, err)
			}
		}
		if rep := readReport(t, prefix); rep.Summary.ByStatus[reports.StatusFail] == 0 {
			t.Errorf("summary %+v", rep.Summary)
		}
	})

	t.Run("fail_on", func(t *testing.T) {
		// The weak sample fails high checks only: at critical it passes.
		err, log, _ := in.run(t, map[string]interface{}{"facts_args": rootfsArgs(bad), "params": params, "execute_command": asRoot,
			"fail_on": "critical", "reports": []string{"json"}})
		if err != nil {
			t.Fatalf("%v\n%s", err, log)
		}
	})

	t.Run("fail_on_skip", func(t *testing.T) {
		// Without vulnerability facts the critical GH-SC-001 is skipped.
		err, log, _ := in.run(t, map[string]interface{}{"facts_args": rootfsArgs(good), "params": params, "execute_command": asRoot,
			"fail_on_skip": "critical", "reports": []string{"json"}})
		if err == nil || !strings.Contains(err.Error(), "could not be evaluated (fail_on_skip)") || !strings.Contains(log, "GH-SC-001") {
			t.Fatalf("err = %v\n%s", err, log)
		}
	})

	t.Run("trivy_db", func(t *testing.T) {
		demo, err := trivy.ReadFixture("../../images/trivy-db-demo.yaml")
		if err != nil {
			t.Fatal(err)
		}
		published := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
		poisoned := demo
		poisoned.Advisories = append(slices.Clone(demo.Advisories), trivy.FixtureAdvisory{Bucket: "debian 12", Package: "openssl", ID: "CVE-2099-0001", Fixed: "3.0.99-1"})
		poisoned.Vulnerabilities = append(slices.Clone(demo.Vulnerabilities), trivy.FixtureVulnerability{ID: "CVE-2099-0001", Title: "test", Severity: map[string]string{"nvd": "CRITICAL"}, Published: &published})
		for _, tc := range []struct {
			name    string
			db      trivy.Fixture
			wantErr string
		}{{"demo DB", demo, ""}, {"fix newer than the instance's", poisoned, "CVE-2099-0001"}} {
			t.Run(tc.name, func(t *testing.T) {
				db := t.TempDir()
				if err := trivy.WriteDB(db, tc.db); err != nil {
					t.Fatal(err)
				}
				err, log, prefix := in.run(t, map[string]interface{}{"facts_args": rootfsArgs(good), "params": params, "execute_command": asRoot,
					"fail_on_skip": "critical", "trivy_db": db, "reports": []string{"json"}})
				switch {
				case tc.wantErr == "" && err != nil:
					t.Fatalf("%v\n%s", err, log)
				case tc.wantErr != "" && (err == nil || !strings.Contains(log, tc.wantErr)):
					t.Fatalf("err = %v; want a failure naming %s\n%s", err, tc.wantErr, log)
				}
				if rep := readReport(t, prefix); rep.Collectors["vulnerabilities"].Status != facts.StatusOK {
					t.Errorf("vulnerabilities collector: %+v", rep.Collectors["vulnerabilities"])
				}
			})
		}
	})

	t.Run("collector failed on the instance", func(t *testing.T) {
		// A FIFO where sshd's config belongs: the ssh collector fails,
		// the CLI prints the document and exits 2, and the build fails as
		// untrusted, with its reports.
		broken := copyRootfs(t, hardened)
		conf := filepath.Join(broken, "etc/ssh/sshd_config")
		if err := os.Remove(conf); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(conf, 0o644); err != nil {
			t.Fatal(err)
		}
		err, log, prefix := in.run(t, map[string]interface{}{"facts_args": rootfsArgs(broken), "params": params, "execute_command": asRoot, "reports": []string{"json"}})
		if err == nil || !strings.Contains(err.Error(), "cannot be trusted") {
			t.Fatalf("err = %v\n%s", err, log)
		}
		if st := readReport(t, prefix).Collectors["ssh"]; st.Status != facts.StatusError {
			t.Errorf("ssh collector %+v", st)
		}
	})

	for _, tc := range []struct {
		name, command, want string
	}{
		{"not JSON", `: '{{.Path}}'; printf 'not json' > '{{.Output}}'`, ".facts.json: "},
		{"not facts", `: '{{.Path}}'; printf '{"schema":"gpuhost.facts/v1"}' > '{{.Output}}'`, ".facts.json: "},
		{"oversized", `: '{{.Path}}'; head -c 67108865 /dev/zero > '{{.Output}}'`, ".facts.json: larger than 67108864 bytes"},
		{"usage error", `'{{.Path}}' {{.Args}} --no-such-flag > '{{.Output}}'`, "exited 2 and left no valid facts document"},
		{"command fails", `echo 'sudo: a password is required' >&2; exit 1; : '{{.Path}}' '{{.Output}}'`, "exited 1: sudo: a password is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err, log, prefix := in.run(t, map[string]interface{}{"facts_args": rootfsArgs(good), "execute_command": tc.command})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q\n%s", err, tc.want, log)
			}
			if !strings.Contains(err.Error(), "gpuhost-scan-") {
				t.Errorf("the error does not name the staged file: %v", err)
			}
			if _, err := os.Stat(evaluation.ReportPath(prefix, "scan", "json")); !os.IsNotExist(err) {
				t.Errorf("a report was written for facts that were never judged: %v", err)
			}
		})
	}
}

// TestScanOverSFTP: the same provisioner with the communicator's sftp
// transfers (ssh_file_transfer_method = "sftp").
func TestScanOverSFTP(t *testing.T) {
	leanCLI(t)
	in := startInstance(t, true)
	good := copyRootfs(t, hardened)
	err, log, prefix := in.run(t, map[string]interface{}{"facts_args": rootfsArgs(good), "params": params, "execute_command": asRoot, "reports": []string{"json"}})
	if err != nil {
		t.Fatalf("%v\n%s", err, log)
	}
	if rep := readReport(t, prefix); rep.Target.Ref != good {
		t.Errorf("report of %+v", rep.Target)
	}
}

// TestScanHostOverSSH runs what a cloud build runs: the default facts host
// through the default sudo command, on the instance (here this machine,
// read-only, with the instance's network namespace). The verdict is this
// machine's, so the test holds the build's outcome to the report it wrote
// rather than to a fixed answer.
func TestScanHostOverSSH(t *testing.T) {
	leanCLI(t)
	testutil.Tool(t, "sudo", "sudo")
	in := startInstance(t, false)
	err, log, prefix := in.run(t, map[string]interface{}{"reports": []string{"json", "html"}})
	rep := readReport(t, prefix)
	if rep.Target.Kind != facts.KindHost {
		t.Fatalf("report of %+v; want the host", rep.Target)
	}
	verdict := evaluation.Verdict(rep, (&Config{Config: evaluation.Config{FailOn: "high"}}).Thresholds())
	if (err == nil) != (verdict == nil) {
		t.Errorf("build error %v, but the report's verdict is %v\n%s", err, verdict, log)
	}
	// The facts came from inside the instance: its one listener is the
	// sshd the communicator talks to.
	var f facts.Facts
	data, rerr := os.ReadFile(prefix + ".scan.facts.json")
	if rerr != nil {
		t.Fatal(rerr)
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range f.SSH.Daemons {
		if d.PID == in.sshd.Cmd.Process.Pid {
			found = true
		}
	}
	if !found || f.Collectors["ssh"].Status != facts.StatusOK {
		t.Errorf("the instance's sshd (pid %d) is not among the facts' daemons %+v (%+v)", in.sshd.Cmd.Process.Pid, f.SSH.Daemons, f.Collectors["ssh"])
	}
}

// The provisioner never passes seeded bases it did not match: the
// instance's facts list them, so GH-SC-001 errors naming why.
func TestSeededImagesOnTheInstanceAreNotPassedUnmatched(t *testing.T) {
	f := facts.New(facts.KindHost, "i-0", time.Unix(0, 0))
	if got := seededNotMatched(f); !strings.Contains(got, "do not list") {
		t.Errorf("no containers facts: %q", got)
	}
	f.Containers = &facts.Containers{Images: []facts.ContainerImage{}}
	if got := seededNotMatched(f); got != "" {
		t.Errorf("nothing seeded: %q, want no error", got)
	}
	f.Containers.Images = append(f.Containers.Images, facts.ContainerImage{Ref: "nvcr.io/nvidia/cuda:12", Digest: "sha256:ab"})
	if got := seededNotMatched(f); !strings.Contains(got, "its 1 seeded images") {
		t.Errorf("one seeded: %q", got)
	}
}
