// Package tls collects the TLS facts: the system default of OpenSSL
// (openssl.cnf and what it includes), every ssl_protocols nginx applies,
// from nginx.conf or, on a live host, the configuration each running
// master was started with (collector "tls"), and, on a live host, what
// every listening TCP port accepts on the wire: the SSL 3.0 to TLS 1.3
// versions, cipher suites and TLS 1.3 groups, enumerated with hellos of
// the probe's own, and its certificate (collector "tls_probe").
package tls

import (
	"context"
	"fmt"
	"path"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/daemon"
	"github.com/gpuhost/gpuhost/facts/collect/textfile"
	"github.com/gpuhost/gpuhost/facts/packages"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// Where Debian and Ubuntu keep the files these collectors read.
const (
	OpenSSLConfigPath = "/etc/ssl/openssl.cnf"
	NginxConfigPath   = "/etc/nginx/nginx.conf"
)

// nginxPackages are the packages that install nginx.conf.
var nginxPackages = []string{"nginx", "nginx-common", "nginx-core", "nginx-light", "nginx-full", "nginx-extras"}

// nginxDefaultPrefix is Debian's compiled-in nginx prefix, which a relative
// -c is resolved against when no -p is given.
const nginxDefaultPrefix = "/usr/share/nginx"

// Collect reads OpenSSL's system default and nginx's TLS settings into
// t, the TLS facts so far (nil when there are none), and returns it; the
// probes are CollectProbes's, and left alone. A missing nginx.conf is an
// error when a package of installed ships it.
func Collect(ctx context.Context, env *collect.Env, t *facts.TLS, installed []facts.Package) (*facts.TLS, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ossl, err := CollectOpenSSL(env.FS)
	if err != nil {
		return nil, err
	}
	nginx, names, err := collectNginxFor(env)
	if err != nil {
		return nil, err
	}
	if len(nginx) == 0 && !textfile.Exists(env.FS, NginxConfigPath) {
		if err := packages.MissingButInstalled(env.FS, installed, NginxConfigPath, nginxPackages); err != nil {
			return nil, err
		}
	}
	if t == nil {
		t = &facts.TLS{}
	}
	t.OpenSSL = ossl
	t.Nginx = nginx
	t.ServerNames = names
	if t.Probes == nil {
		t.Probes = []facts.TLSProbe{}
	}
	return t, nil
}

// CollectOpenSSL returns the system default from /etc/ssl/openssl.cnf, or nil
// when the file is absent (the library default applies).
func CollectOpenSSL(fsys sysroot.FS) (*facts.OpenSSL, error) {
	if !textfile.Exists(fsys, OpenSSLConfigPath) {
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
// nginx master, and otherwise (or when none runs) /etc/nginx/nginx.conf:
// its TLS settings and the names its TLS servers answer to.
func collectNginxFor(env *collect.Env) ([]facts.NginxTLS, []facts.TLSServerName, error) {
	if !env.Live {
		return collectNginxFile(env.FS)
	}
	masters, err := daemon.Running(env.FS, "nginx", NginxCommandLine)
	if err != nil {
		return nil, nil, err
	}
	if len(masters) == 0 {
		return collectNginxFile(env.FS)
	}
	out := []facts.NginxTLS{}
	var names []facts.TLSServerName
	for _, m := range masters {
		cfg, err := LoadNginxAt(env.FS, m.Conf, path.Dir(m.Conf))
		if err != nil {
			return nil, nil, fmt.Errorf("reading the configuration of nginx pid %d: %w", m.PID, err)
		}
		out = append(out, nginxFacts(cfg, "process", m.PID)...)
		names = append(names, serverNameFacts(cfg)...)
	}
	return out, names, nil
}

// CollectNginx returns every ssl_protocols setting of /etc/nginx/nginx.conf
// and its includes, plus nginx's default for TLS servers that set none. It
// is empty, not nil, when nginx is not configured.
func CollectNginx(fsys sysroot.FS) ([]facts.NginxTLS, error) {
	out, _, err := collectNginxFile(fsys)
	return out, err
}

func collectNginxFile(fsys sysroot.FS) ([]facts.NginxTLS, []facts.TLSServerName, error) {
	if !textfile.Exists(fsys, NginxConfigPath) {
		return []facts.NginxTLS{}, nil, nil
	}
	cfg, err := LoadNginx(fsys, NginxConfigPath)
	if err != nil {
		return nil, nil, err
	}
	return nginxFacts(cfg, "file", 0), serverNameFacts(cfg), nil
}

func nginxFacts(cfg *NginxConfig, source string, pid int) []facts.NginxTLS {
	out := []facts.NginxTLS{}
	for _, s := range cfg.TLSSettings() {
		out = append(out, facts.NginxTLS{File: s.File, Line: s.Line, Protocols: s.Protocols, Source: source, PID: pid})
	}
	return out
}

func serverNameFacts(cfg *NginxConfig) []facts.TLSServerName {
	var out []facts.TLSServerName
	for _, n := range cfg.ServerNames() {
		out = append(out, facts.TLSServerName{Name: n.Name, Address: n.Address, Port: n.Port, File: n.File, Line: n.Line})
	}
	return out
}

// nginxOptionsWithArg are nginx's options that take an argument.
const nginxOptionsWithArg = "cegps"

// NginxCommandLine returns the configuration file an nginx command line
// names, absolute: a relative -c is taken from the prefix (-p, else the
// compiled-in one). It is /etc/nginx/nginx.conf when there is no -c.
func NginxCommandLine(argv []string) (string, error) {
	file, prefix := "", nginxDefaultPrefix
	err := daemon.Getopt(argv, nginxOptionsWithArg, func(c byte, v string) {
		switch c {
		case 'c':
			file = v
		case 'p':
			prefix = v
		}
	})
	if err != nil {
		return "", err
	}
	if file == "" {
		return NginxConfigPath, nil
	}
	if !path.IsAbs(file) {
		file = path.Join(prefix, file)
	}
	return path.Clean(file), nil
}
