package config

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/checks/collector"
	"github.com/gpuhost/gpuhost/checks/facts"
	"github.com/gpuhost/gpuhost/checks/sysroot"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// writeTree creates a rootfs in a temporary directory from root-relative
// names and contents.
func writeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(name, "/")))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func openFS(t testing.TB, dir string) sysroot.FS {
	t.Helper()
	fsys, closer, err := sysroot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closer.Close() })
	return fsys
}

// collect runs every collector of the package over dir, as the orchestrator
// would, and returns the document and each collector's error.
func collect(t testing.TB, dir string) (*facts.Facts, map[string]error) {
	t.Helper()
	env := &collector.Env{FS: openFS(t, dir)}
	f := facts.New(facts.KindRootfs, dir, time.Unix(0, 0))
	errs := map[string]error{}
	for _, c := range Collectors() {
		errs[c.Name()] = c.Collect(context.Background(), env, f)
	}
	return f, errs
}

func status(err error) string {
	s, _ := collector.Classify(err)
	return s
}

func TestCollectorsOrder(t *testing.T) {
	var names []string
	for _, c := range Collectors() {
		names = append(names, c.Name())
	}
	if want := []string{"tls", "ssh", "container_runtime"}; !slices.Equal(names, want) {
		t.Fatalf("Collectors() = %v, want %v", names, want)
	}
}

// golden compares the JSON of the facts this package fills with a file under
// testdata/golden, with the root directory written as ROOT.
func golden(t *testing.T, name, root string, f *facts.Facts) {
	t.Helper()
	doc := map[string]any{"tls": f.TLS, "ssh": f.SSH, "container_runtime": f.ContainerRuntime}
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	testutil.GoldenJSON(t, filepath.Join("testdata", "golden", name+".json"), doc, *update, abs, "ROOT")
}

func TestHardenedTree(t *testing.T) {
	root := filepath.Join("testdata", "hardened")
	f, errs := collect(t, root)
	for name, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	fsys := openFS(t, root)

	if f.TLS == nil || f.TLS.OpenSSL == nil {
		t.Fatal("tls.openssl not filled")
	}
	if got := *f.TLS.OpenSSL; got.MinProtocol != "TLSv1.3" || got.MaxProtocol != "" ||
		got.CipherSuites != "TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256" ||
		got.ConfigPath != fsys.Display("/etc/ssl/openssl.cnf") {
		t.Errorf("openssl = %+v", got)
	}
	wantNginx := []facts.NginxTLS{{File: fsys.Display("/etc/nginx/nginx.conf"), Line: 30, Protocols: []string{"TLSv1.3"}}}
	if !equalNginx(f.TLS.Nginx, wantNginx) {
		t.Errorf("nginx = %+v, want %+v", f.TLS.Nginx, wantNginx)
	}
	if f.TLS.Probes == nil || len(f.TLS.Probes) != 0 {
		t.Errorf("probes = %v, want empty", f.TLS.Probes)
	}

	ssh := f.SSH
	if ssh == nil {
		t.Fatal("ssh not filled")
	}
	if ssh.PermitRootLogin != "no" || ssh.PasswordAuthentication != "no" ||
		ssh.KbdInteractiveAuthentication != "no" || ssh.PermitEmptyPasswords != "no" {
		t.Errorf("ssh auth settings = %+v", ssh)
	}
	if want := []string{"chacha20-poly1305@openssh.com", "aes256-gcm@openssh.com", "aes128-gcm@openssh.com", "aes256-ctr"}; !slices.Equal(ssh.Ciphers, want) {
		t.Errorf("ciphers = %v, want %v", ssh.Ciphers, want)
	}
	if len(ssh.Files) != 3 || ssh.Files[2] != fsys.Display("/etc/ssh/sshd_config.d/90-gpuhost-hardening.conf") {
		t.Errorf("files = %v", ssh.Files)
	}
	for _, k := range []string{"permitrootlogin", "passwordauthentication", "ciphers", "kbdinteractiveauthentication"} {
		if !slices.Contains(ssh.Explicit, k) {
			t.Errorf("explicit %v lacks %s", ssh.Explicit, k)
		}
	}

	rt := f.ContainerRuntime
	if rt == nil || rt.Containerd == nil || rt.Docker == nil {
		t.Fatalf("container_runtime = %+v", rt)
	}
	c := rt.Containerd
	if c.ConfigVersion != 3 || !c.NvidiaRuntime || c.NvidiaBinary != "/usr/bin/nvidia-container-runtime" ||
		c.DefaultRuntime != "nvidia" || !c.CDIEnabled {
		t.Errorf("containerd = %+v", c)
	}
	if c.SystemdCgroup == nil || !*c.SystemdCgroup || c.NvidiaSystemdCgroup == nil || !*c.NvidiaSystemdCgroup {
		t.Errorf("containerd SystemdCgroup = %v, nvidia %v", c.SystemdCgroup, c.NvidiaSystemdCgroup)
	}
	if want := []string{fsys.Display("/etc/containerd/conf.d/99-nvidia.toml")}; !slices.Equal(c.Imports, want) {
		t.Errorf("imports = %v, want %v", c.Imports, want)
	}
	if d := rt.Docker; d.DefaultRuntime != "nvidia" || d.CgroupDriver != "systemd" || !d.CDIEnabled || !slices.Equal(d.Runtimes, []string{"nvidia"}) {
		t.Errorf("docker = %+v", d)
	}
	if len(rt.CDISpecs) != 1 || rt.CDISpecs[0].Kind != "nvidia.com/gpu" || !slices.Equal(rt.CDISpecs[0].Devices, []string{"0", "1", "all"}) {
		t.Errorf("cdi = %+v", rt.CDISpecs)
	}
	golden(t, "hardened", root, f)
}

func TestWeakTree(t *testing.T) {
	root := filepath.Join("testdata", "weak")
	f, errs := collect(t, root)
	for name, err := range errs {
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	fsys := openFS(t, root)
	if o := f.TLS.OpenSSL; o == nil || o.MinProtocol != "TLSv1.2" {
		t.Errorf("openssl = %+v", o)
	}
	wantNginx := []facts.NginxTLS{
		{File: fsys.Display("/etc/nginx/nginx.conf"), Line: 21, Protocols: []string{"TLSv1", "TLSv1.1", "TLSv1.2"}},
		{File: fsys.Display("/etc/nginx/conf.d/jupyter.conf"), Line: 7, Protocols: []string{"TLSv1.2"}},
		// The stream server listens with ssl and inherits no ssl_protocols.
		{File: fsys.Display("/etc/nginx/nginx.conf"), Line: 36, Protocols: []string{"TLSv1.2", "TLSv1.3"}},
	}
	if !equalNginx(f.TLS.Nginx, wantNginx) {
		t.Errorf("nginx = %+v, want %+v", f.TLS.Nginx, wantNginx)
	}
	ssh := f.SSH
	if ssh.PermitRootLogin != "yes" || ssh.PasswordAuthentication != "yes" || ssh.KbdInteractiveAuthentication != "yes" {
		t.Errorf("ssh = %+v", ssh)
	}
	if !slices.Contains(ssh.Ciphers, "3des-cbc") || !slices.Contains(ssh.Ciphers, "aes128-cbc") {
		t.Errorf("ciphers = %v", ssh.Ciphers)
	}
	if !slices.Contains(ssh.KexAlgorithms, "diffie-hellman-group1-sha1") || !slices.Contains(ssh.KexAlgorithms, "curve25519-sha256") {
		t.Errorf("kex = %v: want the defaults plus the appended ones", ssh.KexAlgorithms)
	}
	if !slices.Contains(ssh.Explicit, "challengeresponseauthentication") {
		t.Errorf("explicit = %v", ssh.Explicit)
	}
	c := f.ContainerRuntime.Containerd
	if c == nil || c.ConfigVersion != 2 || c.NvidiaRuntime || c.DefaultRuntime != "runc" || c.CDIEnabled ||
		c.SystemdCgroup == nil || *c.SystemdCgroup || c.NvidiaSystemdCgroup != nil || len(c.Imports) != 0 {
		t.Errorf("containerd = %+v", c)
	}
	if d := f.ContainerRuntime.Docker; d == nil || d.DefaultRuntime != "runc" || d.CgroupDriver != "cgroupfs" || d.CDIEnabled || len(d.Runtimes) != 0 {
		t.Errorf("docker = %+v", d)
	}
	golden(t, "weak", root, f)
}

func equalNginx(a, b []facts.NginxTLS) bool {
	return slices.EqualFunc(a, b, func(x, y facts.NginxTLS) bool {
		return x.File == y.File && x.Line == y.Line && slices.Equal(x.Protocols, y.Protocols)
	})
}

func TestEmptyRoot(t *testing.T) {
	f, errs := collect(t, t.TempDir())
	if errs["tls"] != nil {
		t.Fatalf("tls: %v", errs["tls"])
	}
	if f.TLS == nil || f.TLS.OpenSSL != nil || f.TLS.Nginx == nil || len(f.TLS.Nginx) != 0 {
		t.Errorf("tls = %+v, want no openssl and an empty nginx list", f.TLS)
	}
	if s := status(errs["ssh"]); s != facts.StatusNotApplicable {
		t.Errorf("ssh status = %s (%v)", s, errs["ssh"])
	}
	if s := status(errs["container_runtime"]); s != facts.StatusNotApplicable {
		t.Errorf("container_runtime status = %s (%v)", s, errs["container_runtime"])
	}
	if f.SSH != nil || f.ContainerRuntime != nil {
		t.Errorf("facts filled without files: %+v %+v", f.SSH, f.ContainerRuntime)
	}
}

func TestTLSKeepsProbes(t *testing.T) {
	env := &collector.Env{FS: openFS(t, t.TempDir())}
	f := &facts.Facts{TLS: &facts.TLS{Probes: []facts.TLSProbe{{Address: "127.0.0.1:443"}}}}
	if err := (tlsCollector{}).Collect(context.Background(), env, f); err != nil {
		t.Fatal(err)
	}
	if len(f.TLS.Probes) != 1 {
		t.Errorf("probes = %v: the prober's results were dropped", f.TLS.Probes)
	}
}

func TestOpenSSLBrokenChain(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"/etc/ssl/openssl.cnf": "openssl_conf = init\n[init]\nssl_conf = missing_sect\n[system_default_sect]\nMinProtocol = TLSv1.3\n",
	})
	o, err := CollectOpenSSL(openFS(t, dir))
	if err != nil {
		t.Fatal(err)
	}
	if o == nil || o.MinProtocol != "" {
		t.Errorf("openssl = %+v: a broken chain sets nothing", o)
	}
}

func TestContainerdV2DropInUnderV3(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"/etc/containerd/config.toml": "version = 3\nimports = [\"conf.d/*.toml\"]\n",
		// nvidia-ctk before 1.18 style: a version 2 file.
		"/etc/containerd/conf.d/99-nvidia.toml": `version = 2
[plugins."io.containerd.grpc.v1.cri"]
enable_cdi = false
[plugins."io.containerd.grpc.v1.cri".containerd]
default_runtime_name = "nvidia"
[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
BinaryName = "/usr/local/nvidia/toolkit/nvidia-container-runtime"
SystemdCgroup = true
`,
		"/etc/containerd/conf.d/README": "not a toml file",
	})
	fsys := openFS(t, dir)
	c, err := LoadContainerd(fsys, ContainerdConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if !c.NvidiaRuntime || c.DefaultRuntime != "nvidia" || c.SystemdCgroup == nil || !*c.SystemdCgroup || c.CDIEnabled {
		t.Errorf("containerd = %+v", c)
	}
	if len(c.Imports) != 1 {
		t.Errorf("imports = %v", c.Imports)
	}
}

func TestContainerdNoVersionAndUnset(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"/etc/containerd/config.toml": "[plugins.cri.containerd.runtimes.gpu.options]\nBinaryName = \"/usr/bin/nvidia-container-runtime\"\n",
	})
	c, err := LoadContainerd(openFS(t, dir), ContainerdConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if c.ConfigVersion != 1 || !c.NvidiaRuntime || c.NvidiaBinary != "/usr/bin/nvidia-container-runtime" ||
		c.SystemdCgroup != nil || c.NvidiaSystemdCgroup != nil || c.DefaultRuntime != "runc" || c.CDIEnabled {
		t.Errorf("containerd = %+v", c)
	}
}

func TestContainerdImportsOnlyWhatIsNamed(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"/etc/containerd/config.toml": "version = 3\n",
		"/etc/containerd/conf.d/99-nvidia.toml": "version = 3\n[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.nvidia]\n" +
			"runtime_type = \"io.containerd.runc.v2\"\n",
	})
	c, err := LoadContainerd(openFS(t, dir), ContainerdConfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if c.NvidiaRuntime || len(c.Imports) != 0 || !c.CDIEnabled {
		t.Errorf("containerd = %+v: a drop-in no import names was merged, or the v3 CDI default is wrong", c)
	}
}

func TestIncludeCycles(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"/etc/ssl/openssl.cnf":              ".include /etc/ssl/a.cnf\n",
		"/etc/ssl/a.cnf":                    ".include b.cnf\n",
		"/etc/ssl/b.cnf":                    ".include = a.cnf\n",
		"/etc/nginx/nginx.conf":             "include a.conf;\n",
		"/etc/nginx/a.conf":                 "include b.conf;\n",
		"/etc/nginx/b.conf":                 "include a.conf;\n",
		"/etc/ssh/sshd_config":              "Include a.conf\n",
		"/etc/ssh/a.conf":                   "Include /etc/ssh/b.conf\n",
		"/etc/ssh/b.conf":                   "Include a.conf\n",
		"/etc/containerd/config.toml":       "version = 2\nimports = [\"a.toml\"]\n",
		"/etc/containerd/a.toml":            "imports = [\"b.toml\"]\n",
		"/etc/containerd/b.toml":            "imports = [\"a.toml\", \"/etc/containerd/config.toml\"]\n",
		"/etc/cdi/ignored-by-this-test.txt": "",
	})
	fsys := openFS(t, dir)
	if _, err := LoadOpenSSL(fsys, OpenSSLConfigPath); err == nil || !strings.Contains(err.Error(), "deeper") {
		t.Errorf("openssl cycle: %v", err)
	}
	if _, err := LoadNginx(fsys, NginxConfigPath); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Errorf("nginx cycle: %v", err)
	}
	if _, err := LoadSSHD(fsys, SSHDConfigPath); err == nil || !strings.Contains(err.Error(), "deeper") {
		t.Errorf("sshd cycle: %v", err)
	}
	// containerd reads each file once, so a cycle simply ends.
	c, err := LoadContainerd(fsys, ContainerdConfigPath)
	if err != nil {
		t.Fatalf("containerd cycle: %v", err)
	}
	if len(c.Imports) != 2 {
		t.Errorf("imports = %v, want a.toml and b.toml once each", c.Imports)
	}
}

// An absolute symlink must resolve inside the root, or fail; it must never
// reach the host's own file.
func TestSymlinkToHostFile(t *testing.T) {
	hostData, err := os.ReadFile("/etc/passwd")
	if err != nil {
		t.Skip("no /etc/passwd on this host to compare against")
	}
	hostFirst := strings.SplitN(string(hostData), "\n", 2)[0]
	for _, target := range []string{"/etc/passwd", "../../../../../../../../etc/passwd"} {
		dir := writeTree(t, map[string]string{"/etc/passwd": "PermitRootLogin rootfs-own-value\n"})
		if err := os.MkdirAll(filepath.Join(dir, "etc", "ssh"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(dir, "etc", "ssh", "sshd_config")); err != nil {
			t.Fatal(err)
		}
		f, errs := collect(t, dir)
		err := errs["ssh"]
		if err == nil {
			if f.SSH.PermitRootLogin != "rootfs-own-value" {
				t.Errorf("symlink to %s: read something other than the rootfs's file: %+v", target, f.SSH)
			}
			continue
		}
		if hostFirst != "" && strings.Contains(err.Error(), hostFirst) {
			t.Errorf("symlink to %s: error shows the host's file: %v", target, err)
		}
		if f.SSH != nil {
			t.Errorf("symlink to %s: facts filled despite error %v", target, err)
		}
	}
}

func TestFIFOInsteadOfNginxConf(t *testing.T) {
	dir := writeTree(t, map[string]string{"/etc/nginx/.keep": ""})
	fifo := filepath.Join(dir, "etc", "nginx", "nginx.conf")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	_, errs := collect(t, dir)
	err := errs["tls"]
	if !errors.Is(err, sysroot.ErrNotRegular) || !strings.Contains(err.Error(), "nginx.conf") {
		t.Errorf("tls over a FIFO: %v, want a not-regular error naming the file", err)
	}
}

func TestHugeSparseSSHDConfig(t *testing.T) {
	dir := writeTree(t, map[string]string{"/etc/ssh/.keep": ""})
	p := filepath.Join(dir, "etc", "ssh", "sshd_config")
	fh, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := fh.Truncate(100 << 20); err != nil {
		t.Fatal(err)
	}
	fh.Close()
	_, errs := collect(t, dir)
	err = errs["ssh"]
	if !errors.Is(err, sysroot.ErrTooLarge) || status(err) != facts.StatusError || !strings.Contains(err.Error(), "sshd_config") {
		t.Errorf("100 MB sshd_config: %v, want a too-large error naming the file", err)
	}
}

func TestBinaryGarbage(t *testing.T) {
	garbage := "\x7fELF\x02\x01\x01\x00\x00\x00{}\";'\n\x00\xff\xfe[section\n"
	cases := []struct{ file, collector string }{
		{"/etc/ssl/openssl.cnf", "tls"},
		{"/etc/nginx/nginx.conf", "tls"},
		{"/etc/ssh/sshd_config", "ssh"},
		{"/etc/containerd/config.toml", "container_runtime"},
		{"/etc/docker/daemon.json", "container_runtime"},
		{"/etc/cdi/nvidia.yaml", "container_runtime"},
	}
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			dir := writeTree(t, map[string]string{tc.file: garbage})
			_, errs := collect(t, dir)
			err := errs[tc.collector]
			if status(err) != facts.StatusError || !strings.Contains(err.Error(), filepath.Base(tc.file)) {
				t.Errorf("%s: %v, want an error naming the file", tc.collector, err)
			}
		})
	}
}

func TestUnparseableNamesFileAndLine(t *testing.T) {
	cases := []struct {
		file, content, collector, want string
	}{
		{"/etc/nginx/nginx.conf", "events {}\nhttp {\n  server {\n    listen 443 ssl;\n}\n", "tls", "nginx.conf:5"},
		{"/etc/nginx/nginx.conf", "events {}\n}\n", "tls", "nginx.conf:2"},
		{"/etc/nginx/nginx.conf", "http {\n  add_header X \"open;\n}\n", "tls", "nginx.conf: line 2: unterminated quote"},
		{"/etc/ssl/openssl.cnf", "a = 1\n[broken\n", "tls", "openssl.cnf:2"},
		{"/etc/ssl/openssl.cnf", "a = 1\nno equal sign\n", "tls", "openssl.cnf:2"},
		{"/etc/ssh/sshd_config", "Port 22\nBanner \"/etc/issue\n", "ssh", "sshd_config:2"},
		{"/etc/containerd/config.toml", "version = 2\n[plugins\n", "container_runtime", "config.toml:2"},
		{"/etc/containerd/config.toml", "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc.options]\nSystemdCgroup = \"true\"\n", "container_runtime", "SystemdCgroup must be a boolean"},
		{"/etc/docker/daemon.json", "{\n  \"default-runtime\": \"nvidia\",\n}\n", "container_runtime", "daemon.json:3"},
		{"/etc/docker/daemon.json", "{\"exec-opts\": \"native.cgroupdriver=systemd\"}", "container_runtime", "exec-opts"},
		{"/etc/cdi/x.yaml", "kind: a\ndevices: &d\n- name: x\nother: *d\n", "container_runtime", "x.yaml:4: YAML aliases"},
		{"/etc/cdi/x.json", "{\"kind\": [1]}", "container_runtime", "x.json"},
	}
	for _, tc := range cases {
		dir := writeTree(t, map[string]string{tc.file: tc.content})
		_, errs := collect(t, dir)
		err := errs[tc.collector]
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %q: %v, want an error containing %q", tc.file, tc.content, err, tc.want)
		}
	}
}

func TestMissingIncludeIsAnError(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"/etc/nginx/nginx.conf":       "http {\n  include /etc/nginx/missing.conf;\n}\n",
		"/etc/containerd/config.toml": "version = 2\nimports = [\"/etc/containerd/missing.toml\"]\n",
	})
	_, errs := collect(t, dir)
	for _, name := range []string{"tls", "container_runtime"} {
		if err := errs[name]; status(err) != facts.StatusError || !strings.Contains(err.Error(), "missing.") {
			t.Errorf("%s: %v, want an error naming the missing file", name, err)
		}
	}
}

func TestCDIUnderRunWhenVarRunIsALink(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"/run/cdi/vendor.json": `{"cdiVersion":"0.6.0","kind":"example.com/fpga","devices":[{"name":"f0","containerEdits":{}}]}`,
	})
	if err := os.MkdirAll(filepath.Join(dir, "var"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/run", filepath.Join(dir, "var", "run")); err != nil {
		t.Fatal(err)
	}
	f, errs := collect(t, dir)
	if errs["container_runtime"] != nil {
		t.Fatal(errs["container_runtime"])
	}
	specs := f.ContainerRuntime.CDISpecs
	if len(specs) != 1 || specs[0].Kind != "example.com/fpga" || !slices.Equal(specs[0].Devices, []string{"f0"}) {
		t.Errorf("cdi = %+v", specs)
	}
	if f.ContainerRuntime.Containerd != nil || f.ContainerRuntime.Docker != nil {
		t.Errorf("runtime = %+v", f.ContainerRuntime)
	}
}

func BenchmarkCollectorsHardened(b *testing.B) {
	fsys := openFS(b, filepath.Join("testdata", "hardened"))
	env := &collector.Env{FS: fsys}
	ctx := context.Background()
	for b.Loop() {
		f := facts.New(facts.KindRootfs, "bench", time.Unix(0, 0))
		for _, c := range Collectors() {
			if err := c.Collect(ctx, env, f); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// TestNvidiaBinaryMustBeExecutable: a runtime's BinaryName counts only when
// it is an executable regular file inside the target, looked up on the
// shim's PATH when it is a bare command; a link out of the tree never
// reaches the build machine's own binary.
func TestNvidiaBinaryMustBeExecutable(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, mode os.FileMode) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("#!/bin/sh\n"), mode); err != nil {
			t.Fatal(err)
		}
	}
	write("usr/bin/nvidia-container-runtime", 0o755)
	write("usr/bin/not-executable", 0o644)
	if err := os.Symlink("/bin/sh", filepath.Join(dir, "usr/bin/escapes")); err != nil {
		t.Fatal(err)
	}
	fsys, closer, err := sysroot.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	for name, want := range map[string]bool{
		"/usr/bin/nvidia-container-runtime": true,
		"nvidia-container-runtime":          true,
		"/usr/bin/not-executable":           false,
		"/usr/bin/missing":                  false,
		"/usr/bin/escapes":                  false,
	} {
		if got := executableIn(fsys, name); got != want {
			t.Errorf("executableIn(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestInstalledDaemonWithoutItsConfigIsAnError: an sshd or nginx package
// that is installed while its configuration is gone (deleted, or a link to
// nothing) is no "not installed": the collector fails, naming the file, the
// link and the package, so the checks report error instead of skipping.
func TestInstalledDaemonWithoutItsConfigIsAnError(t *testing.T) {
	for _, tc := range []struct {
		collector collector.Collector
		file, pkg string
	}{
		{sshCollector{}, SSHDConfigPath, "openssh-server"},
		{tlsCollector{}, NginxConfigPath, "nginx"},
	} {
		dir := t.TempDir()
		link := filepath.Join(dir, tc.file)
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/nonexistent/config", link); err != nil {
			t.Fatal(err)
		}
		fsys, closer, err := sysroot.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		f := facts.New(facts.KindRootfs, dir, time.Now())
		err = tc.collector.Collect(context.Background(), &collector.Env{FS: fsys}, f)
		closer.Close()
		var o *collector.Outcome
		if err != nil && !errors.As(err, &o) {
			t.Errorf("%s, no package: got %v, want the honest absence", tc.file, err)
		}
		fsys, closer, _ = sysroot.Open(dir)
		f.Packages = []facts.Package{{Name: tc.pkg, Version: "1.0-1", Arch: "amd64"}}
		err = tc.collector.Collect(context.Background(), &collector.Env{FS: fsys}, f)
		closer.Close()
		if err == nil || errors.As(err, &o) || !strings.Contains(err.Error(), "link to /nonexistent/config") || !strings.Contains(err.Error(), tc.pkg) {
			t.Errorf("%s with %s installed: got %v, want an error naming the link and the package", tc.file, tc.pkg, err)
		}
	}
}

// TestSSHHostPrivateKeyFiles lists the host private keys an image carries,
// named by a HostKey line or not, and not their public halves.
func TestSSHHostPrivateKeyFiles(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"/etc/ssh/sshd_config":                "HostKey /etc/ssh/ssh_host_ed25519_key\n",
		"/etc/ssh/ssh_host_ed25519_key":       "PRIVATE",
		"/etc/ssh/ssh_host_ed25519_key.pub":   "ssh-ed25519 AAAA",
		"/etc/ssh/ssh_host_rsa_key":           "PRIVATE",
		"/etc/ssh/ssh_host_rsa_key-cert.pub":  "cert",
		"/etc/ssh/sshd_config.d/keep.conf":    "",
		"/etc/ssh/not_a_host_key":             "",
		"/usr/share/doc/ssh/ssh_host_dsa_key": "",
	})
	f, errs := collect(t, dir)
	if errs["ssh"] != nil {
		t.Fatal(errs["ssh"])
	}
	if want := []string{"/etc/ssh/ssh_host_ed25519_key", "/etc/ssh/ssh_host_rsa_key"}; !slices.Equal(f.SSH.HostPrivateKeyFiles, want) {
		t.Errorf("host private keys %v, want %v", f.SSH.HostPrivateKeyFiles, want)
	}
	clean := writeTree(t, map[string]string{"/etc/ssh/sshd_config": "PermitRootLogin no\n"})
	f, errs = collect(t, clean)
	if errs["ssh"] != nil || len(f.SSH.HostPrivateKeyFiles) != 0 {
		t.Errorf("an image without keys: %v %v", f.SSH.HostPrivateKeyFiles, errs["ssh"])
	}
}
