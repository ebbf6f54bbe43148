package target

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/facts/ssh"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/facts/tls"
	"github.com/gpuhost/gpuhost/target/collector"
	"github.com/gpuhost/gpuhost/target/internal/checktest"
)

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
			dir := collecttest.TempTree(t, map[string]string{tc.file: garbage})
			_, errs := collectDir(t, dir)
			err := errs[tc.collector]
			if collecttest.Status(err) != facts.StatusError || !strings.Contains(err.Error(), filepath.Base(tc.file)) {
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
		dir := collecttest.TempTree(t, map[string]string{tc.file: tc.content})
		_, errs := collectDir(t, dir)
		err := errs[tc.collector]
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s %q: %v, want an error containing %q", tc.file, tc.content, err, tc.want)
		}
	}
}

func TestMissingIncludeIsAnError(t *testing.T) {
	dir := collecttest.TempTree(t, map[string]string{
		"/etc/nginx/nginx.conf":       "http {\n  include /etc/nginx/missing.conf;\n}\n",
		"/etc/containerd/config.toml": "version = 2\nimports = [\"/etc/containerd/missing.toml\"]\n",
	})
	_, errs := collectDir(t, dir)
	for _, name := range []string{"tls", "container_runtime"} {
		if err := errs[name]; collecttest.Status(err) != facts.StatusError || !strings.Contains(err.Error(), "missing.") {
			t.Errorf("%s: %v, want an error naming the missing file", name, err)
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
		{named("ssh"), ssh.SSHDConfigPath, "openssh-server"},
		{named("tls"), tls.NginxConfigPath, "nginx"},
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
		err = tc.collector.Collect(context.Background(), &collect.Env{FS: fsys}, f)
		closer.Close()
		var o *collect.Outcome
		if err != nil && !errors.As(err, &o) {
			t.Errorf("%s, no package: got %v, want the honest absence", tc.file, err)
		}
		fsys, closer, _ = sysroot.Open(dir)
		f.Packages = []facts.Package{{Name: tc.pkg, Version: "1.0-1", Arch: "amd64"}}
		err = tc.collector.Collect(context.Background(), &collect.Env{FS: fsys}, f)
		closer.Close()
		if err == nil || errors.As(err, &o) || !strings.Contains(err.Error(), "link to /nonexistent/config") || !strings.Contains(err.Error(), tc.pkg) {
			t.Errorf("%s with %s installed: got %v, want an error naming the link and the package", tc.file, tc.pkg, err)
		}
	}
}

// collectDir runs the collectors that read daemon configuration (tls, ssh,
// container_runtime) over dir alone, and returns the document and their raw
// errors.
func collectDir(t testing.TB, dir string) (*facts.Facts, map[string]error) {
	t.Helper()
	return checktest.CollectDir(t, dir, named("tls"), named("ssh"), named("container_runtime"))
}

// named is the collector of All() called name.
func named(name string) collector.Collector {
	for _, c := range All() {
		if c.Name() == name {
			return c
		}
	}
	panic("no collector " + name)
}
