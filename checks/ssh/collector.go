// Package ssh collects the ssh facts: sshd's effective settings from
// sshd_config with its Includes and Match blocks and, on a live host, each
// listening sshd as it runs: the configuration its command line names (-f,
// -o) and what it offers on the wire (its KEXINIT and host keys).
package ssh

import (
	"context"
	"fmt"

	"github.com/gpuhost/gpuhost/checks/collector"
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

// Collectors returns the collector of this package: ssh.
func Collectors() []collector.Collector {
	return []collector.Collector{sshCollector{}}
}

// sshCollector fills ssh from sshd_config and its includes.
type sshCollector struct{}

var _ collector.Collector = sshCollector{}

func (sshCollector) Name() string { return "ssh" }

// Needs network and packages: on a live host each listening sshd is found
// among the listeners; a missing sshd_config is an error when openssh-server
// is installed.
func (sshCollector) Needs() []string { return []string{"network", "packages"} }

func (sshCollector) Collect(ctx context.Context, env *collect.Env, f *facts.Facts) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	var file *facts.SSH
	if textfile.Exists(env.FS, SSHDConfigPath) {
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
			if err := packages.MissingButInstalled(env.FS, f.Packages, SSHDConfigPath, sshdPackages); err != nil {
				return err
			}
			return collect.NotApplicable("sshd is not installed (no /etc/ssh/sshd_config) and none runs")
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
		return fmt.Errorf("listing SSH host keys: %w", err)
	}
	file.HostPrivateKeyFiles = keys
	f.SSH = file
	return nil
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
