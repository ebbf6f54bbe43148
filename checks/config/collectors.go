package config

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"slices"

	"github.com/gpuhost/gpuhost/checks/collector"
	"github.com/gpuhost/gpuhost/checks/facts"
	"github.com/gpuhost/gpuhost/checks/sysroot"
)

// Where Debian and Ubuntu keep the files these collectors read.
const (
	OpenSSLConfigPath    = "/etc/ssl/openssl.cnf"
	NginxConfigPath      = "/etc/nginx/nginx.conf"
	SSHDConfigPath       = "/etc/ssh/sshd_config"
	ContainerdConfigPath = "/etc/containerd/config.toml"
	DockerDaemonPath     = "/etc/docker/daemon.json"
)

// tlsCollector fills tls.openssl and tls.nginx from configuration files.
// tls.probes belongs to the live prober and is left alone.
type tlsCollector struct{}

var _ collector.Collector = tlsCollector{}

func (tlsCollector) Name() string { return "tls" }

// Needs packages: a missing nginx.conf is an error when an nginx package is
// installed.
func (tlsCollector) Needs() []string { return []string{"packages"} }

func (tlsCollector) Collect(ctx context.Context, env *collector.Env, f *facts.Facts) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	ossl, err := CollectOpenSSL(env.FS)
	if err != nil {
		return err
	}
	nginx, err := collectNginxFor(env)
	if err != nil {
		return err
	}
	if len(nginx) == 0 && !exists(env.FS, NginxConfigPath) {
		if err := missingButInstalled(env.FS, f, NginxConfigPath); err != nil {
			return err
		}
	}
	if f.TLS == nil {
		f.TLS = &facts.TLS{}
	}
	f.TLS.OpenSSL = ossl
	f.TLS.Nginx = nginx
	if f.TLS.Probes == nil {
		f.TLS.Probes = []facts.TLSProbe{}
	}
	return nil
}

// CollectOpenSSL returns the system default from /etc/ssl/openssl.cnf, or nil
// when the file is absent (the library default applies).
func CollectOpenSSL(fsys sysroot.FS) (*facts.OpenSSL, error) {
	if !exists(fsys, OpenSSLConfigPath) {
		return nil, nil
	}
	cfg, err := LoadOpenSSL(fsys, OpenSSLConfigPath)
	if err != nil {
		return nil, err
	}
	sd := cfg.SystemDefault()
	return &facts.OpenSSL{
		ConfigPath:      fsys.Display(OpenSSLConfigPath),
		MinProtocol:     sd.MinProtocol,
		MinProtocolFile: sd.MinProtocolAt.File,
		MinProtocolLine: sd.MinProtocolAt.Line,
		MaxProtocol:     sd.MaxProtocol,
		CipherSuites:    sd.CipherSuites,
	}, nil
}

// collectNginxFor reads, on a live host, the configuration of every running
// nginx master, and otherwise (or when none runs) /etc/nginx/nginx.conf.
func collectNginxFor(env *collector.Env) ([]facts.NginxTLS, error) {
	if !env.Live {
		return CollectNginx(env.FS)
	}
	masters, err := runningDaemons(env.FS, "nginx", NginxCommandLine)
	if err != nil {
		return nil, err
	}
	if len(masters) == 0 {
		return CollectNginx(env.FS)
	}
	out := []facts.NginxTLS{}
	for _, m := range masters {
		cfg, err := LoadNginxAt(env.FS, m.conf, path.Dir(m.conf))
		if err != nil {
			return nil, fmt.Errorf("reading the configuration of nginx pid %d: %w", m.pid, err)
		}
		out = append(out, nginxFacts(cfg, "process", m.pid)...)
	}
	return out, nil
}

// CollectNginx returns every ssl_protocols setting of /etc/nginx/nginx.conf
// and its includes, plus nginx's default for TLS servers that set none. It
// is empty, not nil, when nginx is not configured.
func CollectNginx(fsys sysroot.FS) ([]facts.NginxTLS, error) {
	if !exists(fsys, NginxConfigPath) {
		return []facts.NginxTLS{}, nil
	}
	cfg, err := LoadNginx(fsys, NginxConfigPath)
	if err != nil {
		return nil, err
	}
	return nginxFacts(cfg, "file", 0), nil
}

func nginxFacts(cfg *NginxConfig, source string, pid int) []facts.NginxTLS {
	out := []facts.NginxTLS{}
	for _, s := range cfg.TLSSettings() {
		out = append(out, facts.NginxTLS{File: s.File, Line: s.Line, Protocols: s.Protocols, Source: source, PID: pid})
	}
	return out
}

// sshCollector fills ssh from sshd_config and its includes.
type sshCollector struct{}

var _ collector.Collector = sshCollector{}

func (sshCollector) Name() string { return "ssh" }

// Needs network and packages: on a live host each listening sshd is found
// among the listeners; a missing sshd_config is an error when openssh-server
// is installed.
func (sshCollector) Needs() []string { return []string{"network", "packages"} }

func (sshCollector) Collect(ctx context.Context, env *collector.Env, f *facts.Facts) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var file *facts.SSH
	if exists(env.FS, SSHDConfigPath) {
		cfg, err := LoadSSHD(env.FS, SSHDConfigPath)
		if err != nil {
			return err
		}
		file = cfg.Facts(env.FS.Display(SSHDConfigPath))
		file.HostKeys = fileHostKeys(env.FS, cfg)
	}
	var daemons []facts.SSHDaemon
	if env.Live {
		var err error
		if daemons, err = liveSSHDaemons(ctx, env, f.Network); err != nil {
			return err
		}
	}
	if len(daemons) == 0 {
		if file == nil {
			if err := missingButInstalled(env.FS, f, SSHDConfigPath); err != nil {
				return err
			}
			return collector.NotApplicable("sshd is not installed (no /etc/ssh/sshd_config) and none runs")
		}
		// No daemon runs: the file is what the next start will use.
		daemons = []facts.SSHDaemon{{SSHSettings: file.SSHSettings, Source: "file", Listen: []string{}, Wire: []facts.SSHWire{}}}
	}
	if file == nil {
		file = &facts.SSH{SSHSettings: daemons[0].SSHSettings, Source: "file"}
	}
	file.Daemons = daemons
	keys, err := globSorted(env.FS, "/", sshHostPrivateKeys)
	if err != nil {
		return fmt.Errorf("listing SSH host keys: %w", err)
	}
	file.HostPrivateKeyFiles = keys
	f.SSH = file
	return nil
}

// collectContainerd reads, on a live host, the configuration the running
// containerd was started with (its --config), and otherwise (or when none
// runs) /etc/containerd/config.toml when there is one. A running containerd
// whose file is missing runs on built-in defaults, which have no nvidia
// runtime: that is an error to report, not a runtime to skip.
func collectContainerd(env *collector.Env) (*facts.Containerd, error) {
	if env.Live {
		running, err := runningDaemons(env.FS, "containerd", ContainerdCommandLine)
		if err != nil {
			return nil, err
		}
		if len(running) > 0 {
			d := running[0]
			if len(running) > 1 && env.Log != nil {
				env.Log.Warn("several containerd daemons run; reading the first", "pid", d.pid, "daemons", len(running))
			}
			ctd, err := LoadContainerd(env.FS, d.conf)
			if err != nil {
				return nil, fmt.Errorf("reading the configuration of containerd pid %d: %w", d.pid, err)
			}
			ctd.Source, ctd.PID = "process", d.pid
			return ctd, nil
		}
	}
	if !exists(env.FS, ContainerdConfigPath) {
		return nil, nil
	}
	ctd, err := LoadContainerd(env.FS, ContainerdConfigPath)
	if err != nil {
		return nil, err
	}
	ctd.Source = "file"
	return ctd, nil
}

// sshHostPrivateKeys is where ssh-keygen -A and the openssh-server package
// put the host keys.
const sshHostPrivateKeys = "/etc/ssh/ssh_host_*_key"

// runtimeCollector fills container_runtime from containerd, docker and CDI.
type runtimeCollector struct{}

var _ collector.Collector = runtimeCollector{}

func (runtimeCollector) Name() string { return "container_runtime" }

// Needs is empty: it reads the target alone.
func (runtimeCollector) Needs() []string { return nil }

func (runtimeCollector) Collect(ctx context.Context, env *collector.Env, f *facts.Facts) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	rt := &facts.ContainerRuntime{CDISpecs: []facts.CDISpec{}}
	ctd, err := collectContainerd(env)
	if err != nil {
		return err
	}
	rt.Containerd = ctd
	if ctd != nil && ctd.ConfigVersion == 1 && env.Log != nil {
		env.Log.Debug("containerd config has no version; reading it as version 2", "file", ctd.ConfigPath)
	}
	data, err := readText(env.FS, DockerDaemonPath)
	switch {
	case err == nil:
		d, err := ParseDockerDaemon(env.FS.Display(DockerDaemonPath), data)
		if err != nil {
			return err
		}
		rt.Docker = d
	case !sysroot.IsNotExist(err):
		return err
	}
	specs, err := CollectCDISpecs(ctx, env.FS)
	if err != nil {
		return err
	}
	rt.CDISpecs = specs
	if rt.Containerd == nil && rt.Docker == nil && len(specs) == 0 {
		return collector.NotApplicable("no container runtime configuration found")
	}
	f.ContainerRuntime = rt
	return nil
}

// CDISpecDirs returns the directories CDI reads specs from. /var/run is a
// symlink to /run on Debian and Ubuntu; an absolute link cannot be followed
// inside the root, so the target directory is read directly.
func CDISpecDirs(fsys sysroot.FS) []string {
	dirs := []string{"/etc/cdi", "/var/run/cdi"}
	if info, err := fsys.Lstat("/var/run"); err == nil && info.Mode()&fs.ModeSymlink != 0 {
		dirs[1] = "/run/cdi"
	}
	return dirs
}

// CollectCDISpecs parses every *.yaml and *.json spec in the CDI directories,
// in lexical order per directory. It is empty, not nil, when there are none.
func CollectCDISpecs(ctx context.Context, fsys sysroot.FS) ([]facts.CDISpec, error) {
	out := []facts.CDISpec{}
	for _, dir := range CDISpecDirs(fsys) {
		var files []string
		for _, ext := range []string{"*.yaml", "*.json"} {
			m, err := globSorted(fsys, dir, ext)
			if err != nil {
				return nil, err
			}
			files = append(files, m...)
		}
		slices.Sort(files)
		if len(files) > maxIncludeFiles {
			return nil, fmt.Errorf("listing %s: more than %d CDI specs", fsys.Display(dir), maxIncludeFiles)
		}
		for _, name := range files {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			data, err := readText(fsys, name)
			if err != nil {
				return nil, err
			}
			spec, err := ParseCDISpec(fsys.Display(name), data)
			if err != nil {
				return nil, err
			}
			out = append(out, *spec)
		}
	}
	return out, nil
}

// exists says whether the main configuration file is there at all. It is
// asked before loading because a missing include also reads as "not exist",
// and that must be an error, not an absent configuration. Any answer other
// than a clear absence lets the loader report the problem.
// shippedBy names, per configuration file, the packages that install it.
var shippedBy = map[string][]string{
	SSHDConfigPath:  {"openssh-server"},
	NginxConfigPath: {"nginx", "nginx-common", "nginx-core", "nginx-light", "nginx-full", "nginx-extras"},
}

// missingButInstalled says why a configuration file that is absent cannot
// mean "not installed": a package that ships it is installed, so the file
// was removed or replaced by a link to nothing, and the daemon runs on
// settings nobody can read. It returns nil when the absence is honest.
func missingButInstalled(fsys sysroot.FS, f *facts.Facts, name string) error {
	for _, p := range f.Packages {
		if !slices.Contains(shippedBy[name], p.Name) {
			continue
		}
		what := "is missing"
		if st, err := fsys.Lstat(name); err == nil && st.Mode()&fs.ModeSymlink != 0 {
			what = "is a symbolic link to nothing in the target"
			if rl, ok := fsys.(interface{ Readlink(string) (string, error) }); ok {
				if to, err := rl.Readlink(name); err == nil {
					what = fmt.Sprintf("is a symbolic link to %s, which does not exist in the target", to)
				}
			}
		}
		return fmt.Errorf("%s %s, but package %s %s, which installs it, is installed", fsys.Display(name), what, p.Name, p.Version)
	}
	return nil
}

func exists(fsys sysroot.FS, name string) bool {
	_, err := fsys.Stat(name)
	return !sysroot.IsNotExist(err)
}
