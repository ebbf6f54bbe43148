// Package domains is where the facts document takes what each domain
// folder under facts/ collects: each domain's collect functions return
// their own facts and know nothing of the document, and each collector
// here puts them under the document's key, with the other domains' facts
// the function reads (its Deps), for the loop (target/collector) to run.
package domains

import (
	"context"
	"slices"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/access"
	"github.com/gpuhost/gpuhost/facts/audit"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/encryption"
	"github.com/gpuhost/gpuhost/facts/files"
	"github.com/gpuhost/gpuhost/facts/gpu"
	"github.com/gpuhost/gpuhost/facts/network"
	"github.com/gpuhost/gpuhost/facts/osinfo"
	"github.com/gpuhost/gpuhost/facts/packages"
	"github.com/gpuhost/gpuhost/facts/runtime"
	"github.com/gpuhost/gpuhost/facts/secureboot"
	"github.com/gpuhost/gpuhost/facts/ssh"
	"github.com/gpuhost/gpuhost/facts/tls"
	"github.com/gpuhost/gpuhost/target/collector"
)

// Collectors are every domain's collectors that a scan runs, in no
// order: the loop orders them by what each needs.
func Collectors() []collector.Collector {
	return slices.Concat(osinfoCollectors(), packagesCollectors(), networkCollectors(), tlsCollectors(),
		runtimeCollectors(), []collector.Collector{GPU(nvml.New()), PCI(), InfiniBand(), GPUDriver()},
		[]collector.Collector{
			alone("access", access.Collect, func(f *facts.Facts) **facts.Access { return &f.Access }),
			collector.Func{ID: "audit", Fill: func(ctx context.Context, env *collect.Env, f *facts.Facts) (err error) {
				f.Audit, err = audit.Collector{State: osinfo.UnitActiveState}.Collect(ctx, env)
				return err
			}},
			alone("encryption", encryption.Collect, func(f *facts.Facts) **facts.Encryption { return &f.Encryption }),
			// The homes are the accounts' and the owners' names theirs.
			collector.Func{ID: "files", Deps: []string{"access"}, Fill: func(ctx context.Context, env *collect.Env, f *facts.Facts) (err error) {
				f.Files, err = files.Collect(ctx, env, f.Access)
				return err
			}},
			alone("secureboot", secureboot.Collect, func(f *facts.Facts) **facts.SecureBoot { return &f.SecureBoot }),
			// On a live host each listening sshd is found among the
			// listeners; a missing sshd_config is an error when
			// openssh-server is installed.
			collector.Func{ID: "ssh", Deps: []string{"network", "packages"}, Fill: func(ctx context.Context, env *collect.Env, f *facts.Facts) (err error) {
				f.SSH, err = ssh.Collect(ctx, env, f.Network, f.Packages)
				return err
			}},
		})
}

// alone is the collector of a collect function that reads the target
// alone, whose facts are the document's key at key(f).
func alone[T any](id string, collectFn func(context.Context, *collect.Env) (T, error), key func(*facts.Facts) *T) collector.Collector {
	return collector.Func{ID: id, Fill: func(ctx context.Context, env *collect.Env, f *facts.Facts) (err error) {
		*key(f), err = collectFn(ctx, env)
		return err
	}}
}

func osinfoCollectors() []collector.Collector {
	return []collector.Collector{
		collector.Func{ID: "os", Fill: func(ctx context.Context, env *collect.Env, f *facts.Facts) error {
			release, host, err := osinfo.CollectOS(ctx, env)
			f.OS = release
			if host != "" {
				f.Target.Hostname = host
			}
			return err
		}},
		alone("kernel", osinfo.CollectKernel, func(f *facts.Facts) **facts.Kernel { return &f.Kernel }),
		alone("kernel_modules", osinfo.CollectKernelModules, func(f *facts.Facts) **facts.KernelModules { return &f.KernelModules }),
		alone("sysctl", osinfo.CollectSysctl, func(f *facts.Facts) **facts.Sysctl { return &f.Sysctl }),
		alone("limits", osinfo.CollectLimits, func(f *facts.Facts) **facts.Limits { return &f.Limits }),
		// systemd's version is its package's.
		collector.Func{ID: "systemd", Deps: []string{"packages"}, Fill: func(ctx context.Context, env *collect.Env, f *facts.Facts) (err error) {
			f.Systemd, err = osinfo.CollectSystemd(ctx, env, f.Packages)
			return err
		}},
		// An image boots the hierarchy its kernel command line or its
		// systemd package chooses.
		collector.Func{ID: "cgroup", Deps: []string{"kernel", "packages"}, Fill: func(ctx context.Context, env *collect.Env, f *facts.Facts) (err error) {
			f.Cgroup, err = osinfo.CollectCgroup(ctx, env, f.Kernel, f.Packages)
			return err
		}},
	}
}

func packagesCollectors() []collector.Collector {
	return []collector.Collector{
		alone("packages", packages.CollectPackages, func(f *facts.Facts) *[]facts.Package { return &f.Packages }),
		alone("manifest", packages.CollectManifest, func(f *facts.Facts) *map[string]any { return &f.Manifest }),
		alone("sbom", packages.CollectSBOM, func(f *facts.Facts) **facts.SBOM { return &f.SBOM }),
	}
}

func networkCollectors() []collector.Collector {
	return []collector.Collector{
		collector.Func{ID: "network", Fill: func(ctx context.Context, env *collect.Env, f *facts.Facts) error {
			ls, err := network.CollectListeners(ctx, env)
			if err != nil {
				return err
			}
			if f.Network == nil {
				f.Network = &facts.Network{}
			}
			f.Network.Listening = ls
			return nil
		}},
		// The firewall joins the listeners in the network facts.
		collector.Func{ID: "firewall", Deps: []string{"network"}, Fill: func(ctx context.Context, env *collect.Env, f *facts.Facts) error {
			net, err := network.CollectFirewall(ctx, env, f.Network)
			if err != nil {
				return err
			}
			f.Network = net
			return nil
		}},
	}
}

func tlsCollectors() []collector.Collector {
	return []collector.Collector{
		// A missing nginx.conf is an error when an nginx package is
		// installed.
		collector.Func{ID: "tls", Deps: []string{"packages"}, Fill: func(ctx context.Context, env *collect.Env, f *facts.Facts) error {
			t, err := tls.Collect(ctx, env, f.TLS, f.Packages)
			if err != nil {
				return err
			}
			f.TLS = t
			return nil
		}},
		// The probe dials the listeners the network collector found, and
		// adds its probes to the TLS facts from configuration.
		collector.Func{ID: "tls_probe", Deps: []string{"network", "tls"}, Fill: func(ctx context.Context, env *collect.Env, f *facts.Facts) error {
			net := f.Collectors["network"]
			t, notJudged, err := tls.CollectProbes(ctx, env, f.TLS, f.Network, net.Status, net.Reason)
			if err != nil {
				return err
			}
			f.TLS = t
			f.NoteNotJudged("tls_probe", notJudged)
			return nil
		}},
	}
}

func runtimeCollectors() []collector.Collector {
	return []collector.Collector{
		alone("container_runtime", runtime.CollectRuntime, func(f *facts.Facts) **facts.ContainerRuntime { return &f.ContainerRuntime }),
		Containers(),
		alone("kubelet", runtime.CollectKubelet, func(f *facts.Facts) **facts.Kubelet { return &f.Kubelet }),
	}
}

// Containers is the collector of the images seeded into the target
// (runtime.CollectContainers), which the scan provisioner runs on its own
// beside the vulnerability matching.
func Containers() collector.Collector {
	return alone("containers", runtime.CollectContainers, func(f *facts.Facts) **facts.Containers { return &f.Containers })
}

// GPU is the collector of the GPUs through the NVML library lib: nvml.New()
// for the real library, loaded at run time, or a go-nvml mock in tests. A
// host without a usable driver keeps its facts (available: false, NVML's
// reason) beside the collector's unavailable outcome.
func GPU(lib nvml.Interface, opts ...gpu.Option) collector.Collector {
	reader := gpu.NewNVML(lib, opts...)
	return collector.Func{ID: "gpu", Fill: func(ctx context.Context, env *collect.Env, f *facts.Facts) error {
		g, err := reader.Collect(ctx, env)
		if g != nil {
			f.GPU = g
		}
		return err
	}}
}

// PCI is the collector of the NVIDIA functions on the PCI bus.
func PCI() collector.Collector {
	return collector.Func{ID: "pci", Fill: func(ctx context.Context, env *collect.Env, f *facts.Facts) (err error) {
		f.PCI, err = gpu.CollectPCI(ctx, env)
		return err
	}}
}

// InfiniBand is the collector of the host's RDMA ports and GPUDirect RDMA.
func InfiniBand() collector.Collector {
	return collector.Func{ID: "infiniband", Fill: func(ctx context.Context, env *collect.Env, f *facts.Facts) (err error) {
		f.InfiniBand, err = gpu.CollectInfiniBand(ctx, env)
		return err
	}}
}

// GPUDriver is the collector of the driver stack. The driver is found
// among the packages; nouveau's blacklisting may be on the kernel command
// line; persistenced and fabricmanager are judged by the enabled units.
func GPUDriver() collector.Collector {
	return collector.Func{ID: "gpu_driver", Deps: []string{"kernel", "packages", "systemd"}, Fill: func(ctx context.Context, env *collect.Env, f *facts.Facts) (err error) {
		pkgs, ran := f.Collectors["packages"]
		status := pkgs.Status
		if !ran {
			status = ""
		}
		f.GPUDriver, err = gpu.CollectDriver(ctx, env, f.Packages, status, pkgs.Reason, f.Kernel, f.Systemd)
		return err
	}}
}

// GPUValidation is the collector of the node's validation, the same
// Validator as gpuhost validate, which adds its block to the GPU facts. It
// is not among Collectors(): it starts a container and runs CUDA on every
// GPU, so a scan runs it only when asked (gpuhost agent --gpu-validate).
func GPUValidation(lib nvml.Interface, opts ...gpu.ValidateOption) collector.Collector {
	v := gpu.NewValidator(lib, opts...)
	return collector.Func{ID: "gpu_validation", Deps: []string{"gpu"}, Fill: func(ctx context.Context, env *collect.Env, f *facts.Facts) error {
		res, err := gpu.CollectValidation(ctx, env, v, f.GPU)
		if err != nil {
			return err
		}
		f.GPU.Validation = res
		return nil
	}}
}
