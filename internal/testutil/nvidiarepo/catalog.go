package nvidiarepo

import (
	"fmt"
	"strings"
)

// The versions the stand-in repositories publish: NVIDIA's own version
// strings, several per package, so that a build that pins one and gets the
// newest instead is caught. The older of each pair is what a test pins.
var (
	// DriverVersions are the driver packages' versions by branch, the
	// pinned one first, then a newer release of the branch.
	DriverVersions = map[string][]string{
		"535": {"535.261.03-1", "535.274.02-1"},
		"550": {"550.144.03-1", "550.163.01-1"},
		"580": {"580.95.05-1", "580.105.08-1"},
	}
	// CUDAVersions are the cuda-toolkit-X-Y versions by X.Y, and the
	// release nvcc reports is X.Y; the branch each needs is in the
	// compatibility matrix (535 -> 12.2, 550 -> 12.4, 580 -> 13.0).
	CUDAVersions = map[string][]string{
		"12.2": {"12.2.0-1", "12.2.2-1"},
		"12.4": {"12.4.0-1", "12.4.1-1"},
		"13.0": {"13.0.1-1", "13.0.2-1"},
	}
	// CUDAComponents are the builds of the component packages each
	// toolkit version's meta packages pull in, by toolkit version and
	// component (the package's name without -X-Y). They carry versions of
	// their own, as NVIDIA's do (CUDA 12.2.2 ships cuda-cudart-12-2
	// 12.2.140-1 and libcublas-12-2 12.2.5.6-1, 12.4.1 cuda-cudart-12-4
	// 12.4.127-1 and libcublas-12-4 12.4.5.8-1, 13.0.1 cuda-cudart-13-0
	// 13.0.88-1; the rest follow the same scheme), and the later release's
	// builds satisfy the earlier meta packages' ">=" too.
	CUDAComponents = map[string]map[string]string{
		"12.2.0-1": {"cuda-nvcc": "12.2.91-1", "cuda-cudart": "12.2.53-1", "libcublas": "12.2.1.16-1"},
		"12.2.2-1": {"cuda-nvcc": "12.2.140-1", "cuda-cudart": "12.2.140-1", "libcublas": "12.2.5.6-1"},
		"12.4.0-1": {"cuda-nvcc": "12.4.99-1", "cuda-cudart": "12.4.99-1", "libcublas": "12.4.2.65-1"},
		"12.4.1-1": {"cuda-nvcc": "12.4.131-1", "cuda-cudart": "12.4.127-1", "libcublas": "12.4.5.8-1"},
		"13.0.1-1": {"cuda-nvcc": "13.0.88-1", "cuda-cudart": "13.0.88-1", "libcublas": "13.0.2.14-1"},
		"13.0.2-1": {"cuda-nvcc": "13.0.96-1", "cuda-cudart": "13.0.96-1", "libcublas": "13.1.0.3-1"},
	}
	// ToolkitVersions are the container toolkit's versions: all four
	// packages at each.
	ToolkitVersions = []string{"1.17.7-1", "1.17.8-1", "1.18.0-1"}
)

// The CUDA repository's distribution and architecture directories this
// stand-in serves by default: NVIDIA's debian12/x86_64, the one a Debian 12
// build host can run the cuda-repo path against. Options.Distro picks
// another of Distros.
const (
	CUDADistro = "debian12"
	CUDAArch   = "x86_64"
	// KeyringDeb is the package the plan fetches by name and checks by
	// digest (gpu.CUDAKeyringDeb).
	KeyringDeb     = "cuda-keyring_1.1-1_all.deb"
	keyringVersion = "1.1-1"
	// Keyring is where cuda-keyring puts the repository key.
	Keyring = "/usr/share/keyrings/cuda-archive-keyring.gpg"
	libDir  = "/usr/lib/x86_64-linux-gnu"
)

// Distros are the CUDA repository directories the stand-in can serve, each
// with the Debian revision NVIDIA gives its driver packages there: "-1" in
// debian12, "-0ubuntu1" in the Ubuntu ones (535.261.03-0ubuntu1). The CUDA
// and container toolkit packages carry the same versions in all three.
var Distros = map[string]string{
	"debian12":   "-1",
	"ubuntu2204": "-0ubuntu1",
	"ubuntu2404": "-0ubuntu1",
}

// DriverVersionsOn are DriverVersions as the distro's repository
// publishes them.
func DriverVersionsOn(distro string) map[string][]string {
	rev, ok := Distros[distro]
	if !ok {
		return nil
	}
	out := make(map[string][]string, len(DriverVersions))
	for branch, vs := range DriverVersions {
		for _, v := range vs {
			out[branch] = append(out[branch], upstream(v)+rev)
		}
	}
	return out
}

// pkg is one binary package: its control fields and its files.
type pkg struct {
	name, version, arch string
	depends, conflicts  string
	provides            string
	description         string
	files               []file
	// conffiles are files under /etc that dpkg keeps as configuration.
	conffiles []string
	// postinst and prerm are maintainer scripts (bodies after set -e).
	postinst, prerm string
	// ldconfig activates libc's ldconfig trigger, as dh_makeshlibs does.
	ldconfig bool
}

// file is a path in a package: regular (mode, data), a symlink (link), or
// a shared library stub with a soname, made by the C compiler.
type file struct {
	path   string
	mode   uint32
	data   string
	link   string
	soname string
}

func (p pkg) debName() string {
	return fmt.Sprintf("%s_%s_%s.deb", p.name, strings.ReplaceAll(p.version, ":", "%3a"), p.arch)
}

// upstream strips the Debian revision: 535.261.03-1 -> 535.261.03.
func upstream(v string) string {
	if i := strings.LastIndex(v, "-"); i >= 0 {
		return v[:i]
	}
	return v
}

// PinningPreferences is the apt preferences file
// nvidia-driver-pinning-<upstream> installs.
func PinningPreferences(upstream string) string {
	return "/etc/apt/preferences.d/nvidia-driver-pinning-" + upstream + ".pref"
}

func script(body string) string { return "#!/bin/sh\n" + body }

// driverPackages are one driver release's packages, in the shape of
// NVIDIA's CUDA repository up to 580: branch-suffixed meta packages
// (nvidia-driver-B-open, nvidia-driver-B, cuda-drivers-B) that depend with
// >= on the branch's components, which is why nvidia-driver-pinning-U
// exists: without its preferences the newest build of each component
// would be taken.
func driverPackages(branch, v string, ignoredPinning bool) []pkg {
	u := upstream(v)
	components := []string{"nvidia-utils-" + branch, "libnvidia-compute-" + branch, "nvidia-compute-utils-" + branch}
	dep := func(names ...string) string {
		var out []string
		for _, n := range names {
			out = append(out, fmt.Sprintf("%s (>= %s)", n, u))
		}
		return strings.Join(out, ", ")
	}
	pinned := append([]string{"nvidia-driver-" + branch + "-open", "nvidia-driver-" + branch, "cuda-drivers-" + branch,
		"nvidia-dkms-" + branch + "-open", "nvidia-dkms-" + branch, "nvidia-fabricmanager-" + branch}, components...)
	// apt reads a preferences.d file only when its name has no extension
	// or .pref: without it, "-535.261.03" would be an extension ("03") and
	// the file silently ignored, every component taken at its newest.
	prefFile := PinningPreferences(u)
	if ignoredPinning {
		prefFile = strings.TrimSuffix(prefFile, ".pref")
	}
	var pref strings.Builder
	fmt.Fprintf(&pref, "# Installed by nvidia-driver-pinning-%s: every package of the driver at %s.\n", u, u)
	fmt.Fprintf(&pref, "Package: %s\nPin: version %s-*\nPin-Priority: 1000\n", strings.Join(pinned, " "), u)

	dkms := func(flavor string) pkg {
		name, license, conflicts := "nvidia-dkms-"+branch, "NVIDIA", "nvidia-dkms-"+branch+"-open"
		if flavor == "open" {
			name, license, conflicts = "nvidia-dkms-"+branch+"-open", "Dual MIT/GPL", "nvidia-dkms-"+branch
		}
		src := "/usr/src/nvidia-" + u
		return pkg{
			name: name, version: v, arch: "amd64", depends: "dkms", conflicts: conflicts, provides: "nvidia-dkms-kernel",
			description: "NVIDIA kernel module source for DKMS (stand-in: a module that only carries the version)",
			files: []file{
				{path: src + "/dkms.conf", mode: 0o644, data: fmt.Sprintf(`PACKAGE_NAME="nvidia"
PACKAGE_VERSION="%s"
AUTOINSTALL="yes"
BUILT_MODULE_NAME[0]="nvidia"
DEST_MODULE_LOCATION[0]="/updates/dkms"
MAKE[0]="make -C ${kernel_source_dir} M=${dkms_tree}/${PACKAGE_NAME}/${PACKAGE_VERSION}/build modules"
CLEAN="true"
`, u)},
				{path: src + "/Kbuild", mode: 0o644, data: "obj-m := nvidia.o\n"},
				{path: src + "/nvidia.c", mode: 0o644, data: fmt.Sprintf(`// gpuhost stand-in for NVIDIA's kernel module: it loads nowhere useful
// and carries the driver's version, as the real one does.
#include <linux/errno.h>
#include <linux/init.h>
#include <linux/module.h>

MODULE_LICENSE(%q);
MODULE_VERSION(%q);
MODULE_DESCRIPTION("gpuhost stand-in for the NVIDIA kernel module");

static int __init nvidia_standin_init(void) { return -ENODEV; }
static void __exit nvidia_standin_exit(void) {}
module_init(nvidia_standin_init);
module_exit(nvidia_standin_exit);
`, license, u)},
			},
			// As NVIDIA's package does, register the source; the plan's
			// dkms autoinstall -k builds it for the image's kernel.
			postinst: fmt.Sprintf("if [ \"$1\" = configure ] && ! dkms status -m nvidia -v %[1]s | grep -q .; then\n\tdkms add -m nvidia -v %[1]s\nfi\n", u),
			prerm:    fmt.Sprintf("dkms remove -m nvidia -v %s --all || true\n", u),
		}
	}
	meta := func(name, dkmsName, conflicts string) pkg {
		return pkg{name: name, version: v, arch: "amd64", conflicts: conflicts,
			depends:     dep(append([]string{dkmsName}, components...)...),
			description: "NVIDIA driver meta package (stand-in)"}
	}
	smi := script(`echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running." >&2
exit 9
`)
	return []pkg{
		{name: "nvidia-driver-pinning-" + u, version: v, arch: "all",
			description: "apt preferences that hold the NVIDIA driver at " + u + " (stand-in)",
			files:       []file{{path: prefFile, mode: 0o644, data: pref.String()}},
			conffiles:   []string{prefFile}},
		meta("nvidia-driver-"+branch+"-open", "nvidia-dkms-"+branch+"-open", "nvidia-driver-"+branch),
		meta("nvidia-driver-"+branch, "nvidia-dkms-"+branch, "nvidia-driver-"+branch+"-open"),
		{name: "cuda-drivers-" + branch, version: v, arch: "amd64", depends: dep("nvidia-driver-" + branch),
			description: "CUDA driver meta package, proprietary modules (stand-in)"},
		dkms("open"),
		dkms("proprietary"),
		{name: "libnvidia-compute-" + branch, version: v, arch: "amd64", ldconfig: true,
			description: "NVIDIA compute libraries (stand-in: libnvidia-ml with its soname and version)",
			files: []file{
				{path: libDir + "/libnvidia-ml.so." + u, mode: 0o644, soname: "libnvidia-ml.so.1"},
				{path: libDir + "/libnvidia-ml.so.1", link: "libnvidia-ml.so." + u},
			}},
		{name: "nvidia-utils-" + branch, version: v, arch: "amd64", depends: fmt.Sprintf("libnvidia-compute-%s (= %s)", branch, v),
			description: "NVIDIA driver utilities (stand-in nvidia-smi, which finds no driver)",
			files:       []file{{path: "/usr/bin/nvidia-smi", mode: 0o755, data: smi}}},
		{name: "nvidia-compute-utils-" + branch, version: v, arch: "amd64",
			description: "NVIDIA compute utilities (stand-in nvidia-persistenced and its unit)",
			files: []file{
				{path: "/usr/bin/nvidia-persistenced", mode: 0o755, data: script("echo \"nvidia-persistenced stand-in " + u + ": no driver\" >&2\nexit 1\n")},
				{path: "/lib/systemd/system/nvidia-persistenced.service", mode: 0o644, data: "[Unit]\nDescription=NVIDIA Persistence Daemon\n\n[Service]\nType=forking\nExecStart=/usr/bin/nvidia-persistenced\n\n[Install]\nWantedBy=multi-user.target\n"},
			}},
		{name: "nvidia-fabricmanager-" + branch, version: v, arch: "amd64",
			description: "NVIDIA Fabric Manager (stand-in)",
			files: []file{
				{path: "/usr/bin/nv-fabricmanager", mode: 0o755, data: script("case \"$1\" in\n--version) echo 'Fabric Manager version is : " + u + "' ;;\n*) echo 'nv-fabricmanager stand-in: no NVSwitch' >&2; exit 1 ;;\nesac\n")},
				{path: "/lib/systemd/system/nvidia-fabricmanager.service", mode: 0o644, data: "[Unit]\nDescription=NVIDIA fabric manager service\n\n[Service]\nType=forking\nExecStart=/usr/bin/nv-fabricmanager\n\n[Install]\nWantedBy=multi-user.target\n"},
			}},
	}
}

// cudaPackages are one CUDA toolkit version's packages, in the shape of
// NVIDIA's: the toolkit meta package depends with ">=" on the release's
// compiler and library meta packages, those with ">=" on the components'
// own builds (CUDAComponents), and the runtime on the configuration
// packages with no version at all. Every payload carries its build: nvcc
// reports it (`release 12.2, V12.2.91`), and the runtime and cuBLAS are
// files named for theirs.
func cudaPackages(release, v string) []pkg {
	dash := strings.ReplaceAll(release, ".", "-")
	major, _, _ := strings.Cut(release, ".")
	u := upstream(v)
	home := "/usr/local/cuda-" + release
	comp := CUDAComponents[v]
	name := func(c string) string { return c + "-" + dash }
	atLeast := func(c string) string { return fmt.Sprintf("%s (>= %s)", name(c), upstream(comp[c])) }
	nvcc := script(fmt.Sprintf(`case "$1" in
--version)
	echo 'nvcc: NVIDIA (R) Cuda compiler driver'
	echo 'Copyright (c) 2005-2025 NVIDIA Corporation'
	echo 'Cuda compilation tools, release %s, V%s'
	echo 'Build cuda_%s.r%s/compiler'
	;;
*) echo 'nvcc stand-in: only --version' >&2; exit 1 ;;
esac
`, release, upstream(comp["cuda-nvcc"]), release, release))
	lib := home + "/targets/x86_64-linux/lib"
	// The configuration packages the runtime depends on with no version:
	// one per release, one per major release and one for all of CUDA, each
	// published at every release's cudart build, so that the newest is a
	// later release's.
	config := []string{"cuda-toolkit-" + dash + "-config-common", "cuda-toolkit-" + major + "-config-common", "cuda-toolkit-config-common"}
	pkgs := []pkg{
		{name: "cuda-toolkit-" + dash, version: v, arch: "amd64",
			depends:     fmt.Sprintf("cuda-compiler-%[1]s (>= %[2]s), cuda-libraries-%[1]s (>= %[2]s), dkms", dash, u),
			description: "CUDA Toolkit " + release + " meta package (stand-in)"},
		{name: "cuda-compiler-" + dash, version: v, arch: "amd64", depends: atLeast("cuda-nvcc"),
			description: "CUDA compiler meta package (stand-in)"},
		{name: "cuda-libraries-" + dash, version: v, arch: "amd64", depends: atLeast("cuda-cudart") + ", " + atLeast("libcublas"),
			description: "CUDA libraries meta package (stand-in)"},
		{name: name("cuda-nvcc"), version: comp["cuda-nvcc"], arch: "amd64",
			description: "CUDA nvcc (stand-in that reports its build)",
			files:       []file{{path: home + "/bin/nvcc", mode: 0o755, data: nvcc}}},
		{name: name("cuda-cudart"), version: comp["cuda-cudart"], arch: "amd64", depends: strings.Join(config, ", "),
			description: "CUDA runtime (stand-in: a file named for its build)",
			files:       []file{{path: lib + "/libcudart.so." + upstream(comp["cuda-cudart"]), mode: 0o644, data: "gpuhost stand-in\n"}}},
		{name: name("libcublas"), version: comp["libcublas"], arch: "amd64",
			description: "cuBLAS (stand-in: a file named for its build)",
			files:       []file{{path: lib + "/libcublas.so." + upstream(comp["libcublas"]), mode: 0o644, data: "gpuhost stand-in\n"}}},
	}
	for _, c := range config {
		pkgs = append(pkgs, pkg{name: c, version: comp["cuda-cudart"], arch: "all",
			description: "CUDA configuration shared by components (stand-in)"})
	}
	return pkgs
}

// NvidiaCTK is the stand-in nvidia-ctk of container toolkit release v (a
// Debian version): it reports its version, and `runtime configure
// --runtime=containerd` writes containerd's config.toml as 1.17 does.
// Tests that need the CLI without the repository use it too.
func NvidiaCTK(v string) string {
	u := upstream(v)
	return script(fmt.Sprintf(`case "$1" in
--version|-v)
	echo 'NVIDIA Container Toolkit CLI version %s'
	echo 'commit: 0000000000000000000000000000000000000000'
	;;
runtime)
	# runtime configure --runtime=containerd [--set-as-default] [--cdi.enabled]:
	# as 1.17 does, into containerd's config.toml.
	[ "$2" = configure ] && [ "$3" = --runtime=containerd ] || { echo "nvidia-ctk stand-in: unsupported: $*" >&2; exit 1; }
	mkdir -p /etc/containerd
	cat >/etc/containerd/config.toml <<'EOF'
version = 2

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia]
  runtime_type = "io.containerd.runc.v2"

[plugins."io.containerd.grpc.v1.cri".containerd.runtimes.nvidia.options]
  BinaryName = "/usr/bin/nvidia-container-runtime"
EOF
	;;
*) echo "nvidia-ctk stand-in: unsupported: $*" >&2; exit 1 ;;
esac
`, u))
}

// toolkitPackages are one container toolkit release: the four packages
// and their dependency shape (the toolkit on its base at the same version
// and on the tools at >=, the tools on the library at >=).
func toolkitPackages(v string) []pkg {
	u := upstream(v)
	ctk := NvidiaCTK(v)
	// The real CLI's lib-version is the library it loaded; the stand-in
	// reads it from the file libnvidia-container.so.1 resolves to.
	cli := script(fmt.Sprintf(`case "$1" in
--version)
	lib=$(readlink -f %s/libnvidia-container.so.1)
	echo 'cli-version: %s'
	echo "lib-version: ${lib##*/libnvidia-container.so.}"
	echo 'build platform: x86_64'
	;;
*) echo 'nvidia-container-cli stand-in: no driver' >&2; exit 1 ;;
esac
`, libDir, u))
	runtime := script(fmt.Sprintf("case \"$1\" in\n--version) echo 'NVIDIA Container Runtime version %s' ;;\n*) echo 'nvidia-container-runtime stand-in' >&2; exit 1 ;;\nesac\n", u))
	return []pkg{
		{name: "libnvidia-container1", version: v, arch: "amd64", ldconfig: true,
			description: "NVIDIA container runtime library (stand-in)",
			files: []file{
				{path: libDir + "/libnvidia-container.so." + u, mode: 0o644, soname: "libnvidia-container.so.1"},
				{path: libDir + "/libnvidia-container.so.1", link: "libnvidia-container.so." + u},
			}},
		{name: "libnvidia-container-tools", version: v, arch: "amd64", depends: fmt.Sprintf("libnvidia-container1 (>= %s)", v),
			description: "NVIDIA container runtime library, nvidia-container-cli (stand-in)",
			files:       []file{{path: "/usr/bin/nvidia-container-cli", mode: 0o755, data: cli}}},
		{name: "nvidia-container-toolkit-base", version: v, arch: "amd64",
			description: "NVIDIA Container Toolkit base: nvidia-ctk and the runtime (stand-in)",
			files: []file{
				{path: "/usr/bin/nvidia-ctk", mode: 0o755, data: ctk},
				{path: "/usr/bin/nvidia-container-runtime", mode: 0o755, data: runtime},
			}},
		{name: "nvidia-container-toolkit", version: v, arch: "amd64",
			depends:     fmt.Sprintf("nvidia-container-toolkit-base (= %s), libnvidia-container-tools (>= %s), libnvidia-container-tools (<< 2.0.0)", v, v),
			description: "NVIDIA Container Toolkit (stand-in)",
			files:       []file{{path: "/usr/bin/nvidia-container-runtime-hook", mode: 0o755, data: runtime}}},
	}
}

// keyringPackage is cuda-keyring: the repository key and, as NVIDIA's
// does, a source list naming NVIDIA's own server (under official, the
// directory of its CUDA repositories), which the plan must replace with
// the repository it was configured with.
func keyringPackage(key []byte, official, distro string) pkg {
	list := fmt.Sprintf("/etc/apt/sources.list.d/cuda-%s-%s.list", distro, CUDAArch)
	return pkg{name: "cuda-keyring", version: keyringVersion, arch: "all",
		description: "GPG keyring for the CUDA repository (stand-in: a throwaway key)",
		files: []file{
			{path: Keyring, mode: 0o644, data: string(key)},
			{path: list, mode: 0o644, data: fmt.Sprintf("deb [signed-by=%s] %s/%s/%s/ /\n", Keyring, official, distro, CUDAArch)},
		},
		conffiles: []string{list}}
}
