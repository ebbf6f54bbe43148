// Package runtime collects what runs containers on the target: the
// container_runtime facts (containerd with its drop-ins and, on a live
// host, the configuration the running containerd was started with; docker's
// daemon.json; CDI specs), the images pre-seeded into the OCI layout the
// gpuhost-gpu provisioner writes, verified blob by blob (containers), and
// the kubelet's configuration with its drop-ins (kubelet).
package runtime

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/daemon"
	"github.com/gpuhost/gpuhost/facts/collect/textfile"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// Where Debian and Ubuntu keep the files these collectors read.
const (
	ContainerdConfigPath = "/etc/containerd/config.toml"
	DockerDaemonPath     = "/etc/docker/daemon.json"
)

// collectContainerd reads, on a live host, the configuration the running
// containerd was started with (its --config), and otherwise (or when none
// runs) /etc/containerd/config.toml when there is one. A running containerd
// whose file is missing runs on built-in defaults, which have no nvidia
// runtime: that is an error to report, not a runtime to skip.
func collectContainerd(env *collect.Env) (*facts.Containerd, error) {
	if env.Live {
		running, err := daemon.Running(env.FS, "containerd", ContainerdCommandLine)
		if err != nil {
			return nil, err
		}
		if len(running) > 0 {
			d := running[0]
			if len(running) > 1 && env.Log != nil {
				env.Log.Warn("several containerd daemons run; reading the first", "pid", d.PID, "daemons", len(running))
			}
			ctd, err := LoadContainerd(env.FS, d.Conf)
			if err != nil {
				return nil, fmt.Errorf("reading the configuration of containerd pid %d: %w", d.PID, err)
			}
			ctd.Source, ctd.PID = "process", d.PID
			return ctd, nil
		}
	}
	if !textfile.Exists(env.FS, ContainerdConfigPath) {
		return nil, nil
	}
	ctd, err := LoadContainerd(env.FS, ContainerdConfigPath)
	if err != nil {
		return nil, err
	}
	ctd.Source = "file"
	return ctd, nil
}

// CollectRuntime reads the container runtimes' configuration: containerd
// (a live host's running daemon's own), docker's daemon.json and the CDI
// specs. A target with none of them runs no containers this collector
// knows. It reads the target alone.
func CollectRuntime(ctx context.Context, env *collect.Env) (*facts.ContainerRuntime, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rt := &facts.ContainerRuntime{CDISpecs: []facts.CDISpec{}}
	ctd, err := collectContainerd(env)
	if err != nil {
		return nil, err
	}
	rt.Containerd = ctd
	if ctd != nil && ctd.ConfigVersion == 1 && env.Log != nil {
		env.Log.Debug("containerd config has no version; reading it as version 2", "file", ctd.ConfigPath)
	}
	data, err := textfile.ReadText(env.FS, DockerDaemonPath)
	switch {
	case err == nil:
		d, err := ParseDockerDaemon(env.FS.Display(DockerDaemonPath), data)
		if err != nil {
			return nil, err
		}
		rt.Docker = d
	case !sysroot.IsNotExist(err):
		return nil, err
	}
	specs, err := CollectCDISpecs(ctx, env.FS)
	if err != nil {
		return nil, err
	}
	rt.CDISpecs = specs
	if rt.Containerd == nil && rt.Docker == nil && len(specs) == 0 {
		return nil, collect.NotApplicable("no container runtime configuration found")
	}
	return rt, nil
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
			m, err := textfile.GlobSorted(fsys, dir, ext)
			if err != nil {
				return nil, err
			}
			files = append(files, m...)
		}
		slices.Sort(files)
		if len(files) > textfile.MaxIncludeFiles {
			return nil, fmt.Errorf("listing %s: more than %d CDI specs", fsys.Display(dir), textfile.MaxIncludeFiles)
		}
		for _, name := range files {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			data, err := textfile.ReadText(fsys, name)
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

// ContainerdCommandLine returns the configuration file a containerd command
// line names (--config or -c, as FILE or =FILE), or the default.
func ContainerdCommandLine(argv []string) (string, error) {
	conf := ContainerdConfigPath
	for i := 1; i < len(argv); i++ {
		a := argv[i]
		if a == "--" {
			break
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") || (name != "config" && name != "c") {
			continue
		}
		if !hasVal {
			if i+1 == len(argv) {
				return "", fmt.Errorf("%s needs a file", a)
			}
			i++
			val = argv[i]
		}
		if val == "" {
			return "", fmt.Errorf("%s names no file", a)
		}
		conf = val
	}
	return conf, nil
}
