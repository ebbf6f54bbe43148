// Package ssh collects the ssh facts: sshd's effective settings from
// sshd_config with its Includes and Match blocks and, on a live host, each
// listening sshd as it runs: the configuration its command line names (-f,
// -o) and what it offers on the wire (its KEXINIT and host keys).
package ssh

import (
	"context"
	"fmt"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/daemon"
	"github.com/gpuhost/gpuhost/facts/collect/textfile"
	"github.com/gpuhost/gpuhost/facts/packages"
)

// SSHDConfigPath is where Debian and Ubuntu keep sshd's configuration.
const SSHDConfigPath = "/etc/ssh/sshd_config"

// sshdPackages are the packages that install sshd_config.
var sshdPackages = []string{"openssh-server"}

// Collect reads sshd's configuration from sshd_config and its includes,
// and on a live host each running sshd's own, found among the listeners
// (net, nil when there are none) and asked over the wire. A missing
// sshd_config is an error when a package of installed ships it.
func Collect(ctx context.Context, env *collect.Env, net *facts.Network, installed []facts.Package) (*facts.SSH, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var file *facts.SSH
	kex := KexDefaultsFor(packageVersion(installed, "openssh-server"))
	if textfile.Exists(env.FS, SSHDConfigPath) {
		cfg, err := LoadSSHD(env.FS, SSHDConfigPath)
		if err != nil {
			return nil, err
		}
		cfg.KexDefaults = kex
		file = cfg.Facts(env.FS.Display(SSHDConfigPath))
		file.HostKeys = fileHostKeys(env.FS, cfg)
	}
	var daemons []facts.SSHDaemon
	if env.Live {
		var err error
		if daemons, err = liveSSHDaemons(ctx, env, net, kex); err != nil {
			return nil, err
		}
	}
	if len(daemons) == 0 {
		if file == nil {
			if err := packages.MissingButInstalled(env.FS, installed, SSHDConfigPath, sshdPackages); err != nil {
				return nil, err
			}
			return nil, collect.NotApplicable("sshd is not installed (no /etc/ssh/sshd_config) and none runs")
		}
		// No daemon runs: the file is what the next start will use.
		daemons = []facts.SSHDaemon{{SSHSettings: file.SSHSettings, Source: "file", Listen: []string{}, Wire: []facts.SSHWire{}}}
	}
	if file == nil {
		file = &facts.SSH{SSHSettings: daemons[0].SSHSettings, Source: "file"}
	}
	file.Daemons = daemons
	keys, err := textfile.GlobSorted(env.FS, "/", sshHostPrivateKeys)
	if err != nil {
		return nil, fmt.Errorf("listing SSH host keys: %w", err)
	}
	file.HostPrivateKeyFiles = keys
	return file, nil
}

// sshHostPrivateKeys is where ssh-keygen -A and the openssh-server package
// put the host keys.
const sshHostPrivateKeys = "/etc/ssh/ssh_host_*_key"

// sshdOptionsWithArg are sshd's getopt options that take an argument.
const sshdOptionsWithArg = "CEbcfghkop"

// SSHDCommandLine returns the configuration file an sshd command line names
// (the default when it names none) and its -o options, in order.
func SSHDCommandLine(argv []string) (string, []string, error) {
	file := SSHDConfigPath
	var opts []string
	err := daemon.Getopt(argv, sshdOptionsWithArg, func(c byte, v string) {
		switch c {
		case 'f':
			file = v
		case 'o':
			opts = append(opts, v)
		}
	})
	return file, opts, err
}

// packageVersion is the installed version of the named package, "" when
// it is not installed or not known.
func packageVersion(installed []facts.Package, name string) string {
	for _, p := range installed {
		if p.Name == name {
			return p.Version
		}
	}
	return ""
}
