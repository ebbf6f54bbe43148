package agentimage

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/sys/unix"

	"github.com/gpuhost/gpuhost/deploy"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/manifest"
)

// runtimeEnv tells the test binary, started again, to act as the container
// runtime for one container (runContainer) instead of running tests.
const runtimeEnv = "GPUHOST_AGENTIMAGE_RUNTIME"

func TestMain(m *testing.M) {
	if spec := os.Getenv(runtimeEnv); spec != "" {
		if err := runContainer(spec); err != nil {
			fmt.Fprintln(os.Stderr, "runtime:", err)
			os.Exit(125)
		}
	}
	os.Exit(m.Run())
}

// container is what runContainer sets up, as a runtime would from the
// image's config and the pod's spec.
type container struct {
	// Root is the unpacked image; it is mounted read-only
	// (readOnlyRootFilesystem).
	Root string
	// Binds are volumes: Source mounted at Target inside Root; ReadOnly
	// ones are read-only all the way down (recursiveReadOnly: Enabled).
	Binds []bind
	// Caps are the capabilities the container keeps (capabilities.add
	// after drop ALL).
	Caps []string
	Argv []string
	Env  []string
}

type bind struct {
	Source, Target string
	ReadOnly       bool
	// Kernel mounts proc and sysfs at the bind's proc/ and sys/, as a
	// node's own root carries them into a hostPath volume of "/".
	Kernel bool
}

var capNumbers = map[string]int{
	"DAC_READ_SEARCH": unix.CAP_DAC_READ_SEARCH,
	"SYS_PTRACE":      unix.CAP_SYS_PTRACE,
	"NET_ADMIN":       unix.CAP_NET_ADMIN,
	"AUDIT_CONTROL":   unix.CAP_AUDIT_CONTROL,
}

// runContainer runs in a fresh mount namespace (the test starts it so),
// and in the node's PID and network namespaces, as the DaemonSet's
// hostPID and hostNetwork ask (the kernel answers audit requests only in
// the initial PID namespace): it mounts the container's filesystems, enters the image's root,
// keeps only the pod's capabilities, sets no_new_privs
// (allowPrivilegeEscalation: false) and executes the entrypoint. Nothing it
// mounts is seen outside its namespace, and all of it goes when it exits.
func runContainer(spec string) error {
	var c container
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		return err
	}
	// The capability bounding set and no_new_privs belong to a thread.
	runtime.LockOSThread()
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("making mounts private: %w", err)
	}
	root := c.Root
	if err := unix.Mount(root, root, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
		return fmt.Errorf("binding the root: %w", err)
	}
	at := func(p string) string { return filepath.Join(root, p) }
	mounts := []struct {
		src, dst, fstype string
		flags            uintptr
		data             string
	}{
		{"proc", "/proc", "proc", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, ""},
		{"sysfs", "/sys", "sysfs", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_RDONLY, ""},
		{"tmpfs", "/dev", "tmpfs", unix.MS_NOSUID, "mode=755,size=64k"},
		{"tmpfs", "/tmp", "tmpfs", unix.MS_NOSUID | unix.MS_NODEV, "size=64m"},
	}
	for _, m := range mounts {
		if err := unix.Mount(m.src, at(m.dst), m.fstype, m.flags, m.data); err != nil {
			return fmt.Errorf("mounting %s at %s: %w", m.fstype, m.dst, err)
		}
	}
	for _, dev := range []string{"null", "zero", "full", "random", "urandom"} {
		if err := os.WriteFile(at("/dev/"+dev), nil, 0o666); err != nil {
			return err
		}
		if err := unix.Mount("/dev/"+dev, at("/dev/"+dev), "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("binding /dev/%s: %w", dev, err)
		}
	}
	for _, b := range c.Binds {
		dst := at(b.Target)
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
		if err := unix.Mount(b.Source, dst, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("binding %s at %s: %w", b.Source, b.Target, err)
		}
		if b.Kernel {
			for _, k := range []string{"proc", "sysfs"} {
				d := filepath.Join(dst, strings.TrimSuffix(k, "fs"))
				if err := os.MkdirAll(d, 0o555); err != nil {
					return err
				}
				if err := unix.Mount(k, d, k, unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
					return fmt.Errorf("mounting %s at %s: %w", k, d, err)
				}
			}
		}
		if b.ReadOnly {
			if err := unix.MountSetattr(-1, dst, unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
				return fmt.Errorf("making %s read-only: %w", b.Target, err)
			}
		}
	}
	if err := unix.MountSetattr(-1, root, 0, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("making the root read-only: %w", err)
	}
	last, err := os.ReadFile("/proc/sys/kernel/cap_last_cap")
	if err != nil {
		return err
	}
	lastCap, err := strconv.Atoi(strings.TrimSpace(string(last)))
	if err != nil {
		return err
	}
	keep := map[int]bool{}
	for _, name := range c.Caps {
		n, ok := capNumbers[name]
		if !ok {
			return fmt.Errorf("capability %s: not one this runtime knows", name)
		}
		keep[n] = true
	}
	if err := unix.Chroot(root); err != nil {
		return fmt.Errorf("chroot: %w", err)
	}
	if err := os.Chdir("/"); err != nil {
		return err
	}
	for n := 0; n <= lastCap; n++ {
		if !keep[n] {
			if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(n), 0, 0, 0); err != nil {
				return fmt.Errorf("dropping capability %d: %w", n, err)
			}
		}
	}
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil {
		return err
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return err
	}
	return unix.Exec(c.Argv[0], c.Argv, c.Env)
}

// TestAgentImageInAChroot builds the agent's image on a real mmdebstrap
// base, pushes it to a registry and pulls it by digest, unpacks it, and
// runs its entrypoint with the DaemonSet's arguments, capabilities and
// mounts, the way a runtime would: the image's root read-only, a host tree
// read-only at /host, no NVIDIA runtime. /metrics must answer over TLS with
// the token, and NVML must report its own error there: no library.
func TestAgentImageInAChroot(t *testing.T) {
	if testing.Short() {
		t.Skip("bootstraps a Debian root filesystem (make test runs it)")
	}
	testutil.Root(t)
	testutil.Tool(t, "mmdebstrap", "mmdebstrap")
	tarBin := testutil.Tool(t, "tar", "tar")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	work := t.TempDir()

	base := os.Getenv("GPUHOST_AGENT_BASE")
	if base == "" {
		base = filepath.Join(work, "base.tar")
		if err := Base(ctx, base, BaseOptions{AptCache: os.Getenv("GPUHOST_E2E_APT_CACHE"), SourceDateEpoch: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
	}
	img, err := Build(base, testutil.LeanAgent(t), Options{Version: "test"})
	if err != nil {
		t.Fatal(err)
	}

	// Through a registry and back by digest, as a node pulls it.
	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer reg.Close()
	digest, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	repo, err := name.NewRepository(strings.TrimPrefix(reg.URL, "http://")+"/gpuhost/gpuhost-agent", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	ref := repo.Digest(digest.String())
	if err := remote.Write(ref, img); err != nil {
		t.Fatal(err)
	}
	pulled, err := remote.Image(ref)
	if err != nil {
		t.Fatal(err)
	}
	cf, err := pulled.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(work, "rootfs")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	untar := exec.CommandContext(ctx, tarBin, "-x", "-p", "--numeric-owner", "-C", root)
	untar.Stdin = mutate.Extract(pulled)
	if b, err := untar.CombinedOutput(); err != nil {
		t.Fatalf("unpacking the image: %v\n%s", err, b)
	}

	// The DaemonSet as the demo renders it, with this image.
	var ds bytes.Buffer
	if err := deploy.RenderDaemonSet(&ds, ref.String()); err != nil {
		t.Fatal(err)
	}
	pod := podSpec(t, ds.Bytes())
	if pod.Image != ref.String() {
		t.Fatalf("the rendered DaemonSet runs %s, want %s", pod.Image, ref)
	}

	// The pod's volumes: a host tree carrying its baked manifest, the
	// history, the TLS pair, the token.
	host := filepath.Join(work, "host")
	if b, err := exec.Command("cp", "-a", "../../cmd/gpuhost/testdata/rootfs-hardened", host).CombinedOutput(); err != nil {
		t.Fatalf("copying the host tree: %v\n%s", err, b)
	}
	writeManifest(t, host)
	state, tlsDir, tokenDir := filepath.Join(work, "state"), filepath.Join(work, "tls"), filepath.Join(work, "token")
	for _, d := range []string{state, tlsDir, tokenDir} {
		os.Mkdir(d, 0o700)
	}
	ca := testutil.NewCA(t)
	cert, key, _ := testutil.WriteCert(t, tlsDir, testutil.CertSpec{CA: ca, DNS: []string{"gpuhost-agent.gpuhost.svc"}})
	os.Rename(cert, filepath.Join(tlsDir, "tls.crt"))
	os.Rename(key, filepath.Join(tlsDir, "tls.key"))
	const token = "s3cret-token-for-the-test"
	os.WriteFile(filepath.Join(tokenDir, "token"), []byte(token+"\n"), 0o400)

	args := make([]string, 0, len(pod.Args))
	for _, a := range pod.Args {
		// One pod's address: this test's loopback, any free port.
		a = strings.ReplaceAll(a, "$(POD_IP):9108", "127.0.0.1:0")
		args = append(args, a)
	}
	// The cluster it runs in, for --node-label: the kubelet's environment
	// and the pod's token mount (at /run/secrets, which the image's
	// /var/run links to: the path resolves inside the image, as a runtime
	// resolves it, not on this machine).
	cluster := startCluster(t, ds.Bytes())
	env := append(slices.Clone(cf.Config.Env), "POD_IP=127.0.0.1")
	env = append(env, pod.Env...)
	env = append(env, cluster.env()...)
	c := container{
		Root: root,
		Binds: []bind{
			{Source: host, Target: "/host", ReadOnly: true, Kernel: true},
			{Source: state, Target: "/var/lib/gpuhost"},
			{Source: tlsDir, Target: "/etc/gpuhost/tls", ReadOnly: true},
			{Source: tokenDir, Target: "/etc/gpuhost/token", ReadOnly: true},
			{Source: cluster.saDir, Target: "/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true},
		},
		Caps: pod.Caps,
		Argv: append(slices.Clone(cf.Config.Entrypoint), args...),
		Env:  env,
	}
	spec, _ := json.Marshal(c)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), runtimeEnv+"="+string(spec))
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	var agentLog bytes.Buffer
	lines := make(chan string, 100)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		exited <- cmd.Wait()
	}()
	defer func() {
		cmd.Process.Kill() // the agent, by PID; its mounts go with its namespace
		for range lines {
		}
		if t.Failed() {
			t.Logf("the agent's log:\n%s", agentLog.String())
		}
	}()

	// Wait for the listener, and for the first run's NVML error, noticing
	// if the agent exits.
	listening := regexp.MustCompile(`agent listening.* address=(127\.0\.0\.1:[0-9]+)`)
	addr, nvmlErr := "", ""
	deadline := time.After(5 * time.Minute)
	for addr == "" || nvmlErr == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("the agent exited: %v", <-exited)
			}
			agentLog.WriteString(l + "\n")
			if m := listening.FindStringSubmatch(l); m != nil {
				addr = m[1]
			}
			if strings.Contains(l, "initializing NVML") {
				nvmlErr = l
			}
		case <-deadline:
			t.Fatalf("no listener and NVML error after 5 minutes (listener %q)", addr)
		}
	}
	// What the agent says of its node's marks once its first run is done.
	nodeLine := make(chan string, 1)
	go func() {
		for l := range lines {
			agentLog.WriteString(l + "\n")
			if strings.Contains(l, `msg="node `) {
				select {
				case nodeLine <- l:
				default:
				}
			}
		}
	}()

	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool(), ServerName: "gpuhost-agent.gpuhost.svc", MinVersion: tls.VersionTLS13}}}
	get := func(path, bearer string) (int, string) {
		req, _ := http.NewRequest("GET", "https://"+addr+path, nil)
		if bearer != "" {
			req.Header.Set("Authorization", "Bearer "+bearer)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		return resp.StatusCode, string(b)
	}
	if code, _ := get("/metrics", ""); code != http.StatusUnauthorized {
		t.Errorf("/metrics without the token: %d, want 401", code)
	}
	var metrics string
	for i := 0; ; i++ {
		code, body := get("/metrics", token)
		if code != http.StatusOK {
			t.Fatalf("/metrics: %d %s", code, body)
		}
		metrics = body
		if strings.Contains(body, "gpuhost_check_status{") || i == 120 {
			break
		}
		time.Sleep(time.Second)
	}
	// NVML's own words: the image carries no libnvidia-ml, and without the
	// NVIDIA runtime nothing mounts one in.
	if !strings.Contains(nvmlErr, "ERROR_LIBRARY_NOT_FOUND") && !strings.Contains(nvmlErr, "library not found") {
		t.Errorf("the NVML error is not NVML's library-not-found: %s", nvmlErr)
	}
	for _, want := range []string{"gpuhost_gpu_nvml_up 0", "gpuhost_gpus 0", "gpuhost_check_status{", "gpuhost_last_run_timestamp_seconds"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	check := exec.Command(testutil.Tool(t, "promtool", "prometheus"), "check", "metrics")
	check.Stdin = strings.NewReader(metrics)
	if b, err := check.CombinedOutput(); err != nil {
		t.Errorf("promtool check metrics: %v\n%s", err, b)
	}
	t.Logf("%s: %s", ref, nvmlErr)
	// The run judged the GPUs from what it saw: a host with NVIDIA's
	// packages whose NVML cannot load fails, naming NVML's error.
	_, latest := get("/api/v1/runs/latest", token)
	var run any
	if err := json.Unmarshal([]byte(latest), &run); err != nil {
		t.Fatalf("/api/v1/runs/latest: %v", err)
	}
	gpu := findResult(run, "GH-GPU-020")
	if gpu == nil || gpu["status"] != "fail" || !strings.Contains(fmt.Sprint(gpu["messages"]), "ERROR_LIBRARY_NOT_FOUND") {
		t.Errorf("GH-GPU-020 = %v, want a failure naming ERROR_LIBRARY_NOT_FOUND", gpu)
	}
	if _, err := os.Stat(filepath.Join(state, "history.db")); err != nil {
		t.Errorf("the history is not on the node's volume: %v", err)
	}
	select {
	case l := <-nodeLine:
		cluster.judged(t, l, "GH-GPU-020")
	case <-time.After(time.Minute):
		t.Error("the agent said nothing of its node's marks a minute after its run")
	}
}

// findResult finds the result object of check id anywhere in a decoded
// JSON document.
func findResult(v any, id string) map[string]any {
	switch v := v.(type) {
	case map[string]any:
		if v["id"] == id && v["status"] != nil {
			return v
		}
		for _, e := range v {
			if r := findResult(e, id); r != nil {
				return r
			}
		}
	case []any:
		for _, e := range v {
			if r := findResult(e, id); r != nil {
				return r
			}
		}
	}
	return nil
}

// writeManifest bakes the host tree's manifest, as the image builder does,
// for the agent's --baseline.
func writeManifest(t *testing.T, host string) {
	t.Helper()
	fsys, closer, err := sysroot.Open(host)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	m, err := manifest.Build(context.Background(), fsys, manifest.Options{Time: time.Now()})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(host, "etc/gpuhost"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := m.Write(filepath.Join(host, manifest.Path)); err != nil {
		t.Fatal(err)
	}
}

// pod is what the test takes from the rendered DaemonSet's one container.
type pod struct {
	Image string
	Args  []string
	Env   []string
	Caps  []string
}

func podSpec(t *testing.T, ds []byte) pod {
	t.Helper()
	dec := yaml.NewDecoder(bytes.NewReader(ds))
	for {
		var d struct {
			Kind string
			Spec struct {
				Template struct {
					Spec struct {
						Containers []struct {
							Image string
							Args  []string
							Env   []struct {
								Name, Value string
							}
							SecurityContext struct {
								Capabilities struct {
									Add, Drop []string
								}
							} `yaml:"securityContext"`
						}
					}
				}
			}
		}
		if err := dec.Decode(&d); err != nil {
			t.Fatalf("no DaemonSet in the rendered manifests: %v", err)
		}
		if d.Kind != "DaemonSet" {
			continue
		}
		c := d.Spec.Template.Spec.Containers[0]
		p := pod{Image: c.Image, Args: c.Args, Caps: c.SecurityContext.Capabilities.Add}
		for _, e := range c.Env {
			if e.Value != "" {
				p.Env = append(p.Env, e.Name+"="+e.Value)
			}
		}
		return p
	}
}
