package ubunturepo

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Canonical's NVIDIA server drivers, as the restricted component carries
// them: per branch, the userspace of source nvidia-graphics-drivers-B-server
// (nvidia-headless-no-dkms-B-server[-open], nvidia-utils-B-server and the
// libraries and daemons they depend on, each at "= version"), and the
// precompiled modules of source linux-restricted-modules for the archive's
// kernel (linux-modules-nvidia-B-server[-open]-KERNEL and its -generic
// meta package), which depend on the userspace with ">=". The release
// pocket publishes the older build of each branch, -updates the newer, as
// a driver update does; only the source pin the plan writes keeps apt from
// mixing the two. The stand-in publishes one build of the modules, for the
// older driver: Canonical's rebuild of the modules for a driver update is
// not modelled.

// ArchiveDriverUpstreams are the driver releases the restricted component
// publishes by branch: the pinned one first, then a newer release.
var ArchiveDriverUpstreams = map[string][]string{
	"535": {"535.261.03", "535.274.02"},
	"550": {"550.144.03", "550.163.01"},
	"580": {"580.95.05", "580.105.08"},
}

// ArchiveDriverVersion is the package version Canonical's archive gives
// driver release upstream in suite, the nth build for that release
// (580.95.05-0ubuntu0.24.04.2).
func ArchiveDriverVersion(suite, upstream string) string {
	return fmt.Sprintf("%s-0ubuntu0.%s.2", upstream, releases[suite].number)
}

// ArchiveModulesPackage is the package of the precompiled modules of
// branch for kernel: linux-modules-nvidia-580-server-open-6.1.0-50-amd64.
func ArchiveModulesPackage(branch string, open bool, kernel string) string {
	return "linux-modules-nvidia-" + branch + serverSuffix(open) + "-" + kernel
}

func serverSuffix(open bool) string {
	if open {
		return "-server-open"
	}
	return "-server"
}

// restrictedSpec is one package of the restricted component and the pocket
// it is published in.
type restrictedSpec struct {
	ctl     stanza
	files   map[string]string
	updates bool
}

// restrictedPackages builds the restricted component's packages and
// returns those of the release pocket and of -updates.
func (b *suiteBuilder) restrictedPackages() (pkgs, updates []published, err error) {
	var specs []restrictedSpec
	for _, branch := range slices.Sorted(func(yield func(string) bool) {
		for br := range ArchiveDriverUpstreams {
			if !yield(br) {
				return
			}
		}
	}) {
		ups := ArchiveDriverUpstreams[branch]
		for i, u := range ups {
			lib, err := b.nvmlObject(u)
			if err != nil {
				return nil, nil, err
			}
			for _, s := range driverUserspace(b.suite, branch, u, lib) {
				specs = append(specs, restrictedSpec{ctl: s.ctl, files: s.files, updates: i > 0})
			}
		}
		for _, open := range []bool{false, true} {
			mods, err := b.moduleSpecs(branch, open, ups[0])
			if err != nil {
				return nil, nil, err
			}
			specs = append(specs, mods...)
		}
	}
	for _, s := range specs {
		p, err := b.publishNew("restricted", s.ctl, s.files)
		if err != nil {
			return nil, nil, err
		}
		if s.updates {
			updates = append(updates, p)
		} else {
			pkgs = append(pkgs, p)
		}
	}
	return pkgs, updates, nil
}

// restrictedControl is the control of a package of the restricted
// component.
func restrictedControl(name, source, version, arch, depends, description string) stanza {
	s := stanza{
		{"Package", name}, {"Source", source}, {"Version", version}, {"Architecture", arch},
		{"Maintainer", "gpuhost tests <tests@gpuhost.invalid>"}, {"Installed-Size", "1"},
	}
	if depends != "" {
		s = append(s, field{"Depends", depends})
	}
	return append(s, field{"Section", "restricted/libs"}, field{"Priority", "optional"},
		field{"Description", description + " (gpuhost stand-in)"})
}

// driverUserspace are one driver release's userspace packages, built from
// source nvidia-graphics-drivers-BRANCH-server at the archive's version.
func driverUserspace(suite, branch, u string, nvml []byte) []restrictedSpec {
	v := ArchiveDriverVersion(suite, u)
	src := "nvidia-graphics-drivers-" + branch + "-server"
	exact := func(names ...string) string {
		var out []string
		for _, n := range names {
			out = append(out, fmt.Sprintf("%s-%s-server (= %s)", n, branch, v))
		}
		return strings.Join(out, ", ")
	}
	so := "usr/lib/x86_64-linux-gnu/libnvidia-ml.so." + u
	headless := exact("nvidia-kernel-common", "libnvidia-compute", "nvidia-compute-utils")
	smi := "#!/bin/sh\necho \"NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure that the latest NVIDIA driver is installed and running.\" >&2\nexit 9\n"
	return []restrictedSpec{
		{ctl: restrictedControl("libnvidia-compute-"+branch+"-server", src, v, "amd64", "",
			"NVIDIA libcompute package: libnvidia-ml with its soname and version"),
			files: map[string]string{
				so: string(nvml),
				"usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1": "->libnvidia-ml.so." + u,
				// As dh_makeshlibs does: ldconfig runs once dpkg is done.
				"DEBIAN/triggers": "activate-noawait ldconfig\n",
			}},
		{ctl: restrictedControl("nvidia-kernel-common-"+branch+"-server", src, v, "amd64", "",
			"Shared files used with the kernel module"),
			files: map[string]string{"usr/share/doc/nvidia-kernel-common-" + branch + "-server/README.gpuhost": "NVIDIA " + u + " kernel common files (stand-in).\n"}},
		{ctl: restrictedControl("nvidia-compute-utils-"+branch+"-server", src, v, "amd64", exact("libnvidia-compute"),
			"NVIDIA compute utilities: nvidia-persistenced and its unit"),
			files: map[string]string{
				"usr/bin/nvidia-persistenced":                    "#!/bin/sh\necho \"nvidia-persistenced stand-in " + u + ": no driver\" >&2\nexit 1\n",
				"lib/systemd/system/nvidia-persistenced.service": "[Unit]\nDescription=NVIDIA Persistence Daemon\n\n[Service]\nType=forking\nExecStart=/usr/bin/nvidia-persistenced\n\n[Install]\nWantedBy=multi-user.target\n",
			}},
		{ctl: restrictedControl("nvidia-utils-"+branch+"-server", src, v, "amd64", exact("libnvidia-compute"),
			"NVIDIA driver support binaries: nvidia-smi, which finds no driver"),
			files: map[string]string{"usr/bin/nvidia-smi": smi}},
		{ctl: restrictedControl("nvidia-headless-no-dkms-"+branch+"-server", src, v, "amd64", headless,
			"NVIDIA headless metapackage, no DKMS: the precompiled modules come from linux-modules-nvidia")},
		{ctl: restrictedControl("nvidia-headless-no-dkms-"+branch+"-server-open", src, v, "amd64", headless,
			"NVIDIA headless metapackage, open kernel modules, no DKMS")},
		{ctl: restrictedControl("nvidia-driver-"+branch+"-server", src, v, "amd64",
			exact("nvidia-headless-no-dkms", "nvidia-utils"), "NVIDIA Server Driver metapackage")},
	}
}

// moduleSpecs are the precompiled modules of branch for the archive's
// kernel, built for driver release u, and their -generic meta package.
func (b *suiteBuilder) moduleSpecs(branch string, open bool, u string) ([]restrictedSpec, error) {
	meta, err := kernelMetaVersion(b.kernel)
	if err != nil {
		return nil, err
	}
	ko, err := b.moduleObject(u, open)
	if err != nil {
		return nil, err
	}
	name := ArchiveModulesPackage(branch, open, b.kernel)
	version := meta + "+1"
	src := "linux-restricted-modules"
	dir := "nvidia-" + branch + "srv"
	if open {
		dir += "-open"
	}
	depends := fmt.Sprintf("linux-image-%s, nvidia-kernel-common-%s-server (>= %s)", b.kernel, branch, u)
	generic := "linux-modules-nvidia-" + branch + serverSuffix(open) + "-generic"
	return []restrictedSpec{
		{ctl: restrictedControl(name, src, version, "amd64", depends,
			"Linux kernel nvidia modules for version "+b.kernel+", signed by Canonical"),
			files: map[string]string{"lib/modules/" + b.kernel + "/kernel/" + dir + "/nvidia.ko": string(ko)}},
		{ctl: restrictedControl(generic, src, version, "amd64", name+" (= "+version+")",
			"Extra drivers for nvidia-"+branch+"-server for the generic flavour")},
	}, nil
}

// nvmlObject is libnvidia-ml.so.U as a shared object with its soname, so
// that ldconfig lists it as libnvidia-ml.so.1; made once per release.
func (b *suiteBuilder) nvmlObject(u string) ([]byte, error) {
	return b.compiled("libnvidia-ml.so."+u, fmt.Sprintf("const char gpuhost_standin[] = \"libnvidia-ml %s\";\nint nvmlInit_v2(void) { return 9; }\n", u),
		"-shared", "-fPIC", "-nostdlib", "-Wl,-soname,libnvidia-ml.so.1", "-Wl,--build-id=none")
}

// moduleObject is an ELF object that modinfo reads as the nvidia module
// of release u: only its .modinfo section, which is all the plan's check
// of the payload and the scan's module facts read. It loads nowhere.
func (b *suiteBuilder) moduleObject(u string, open bool) ([]byte, error) {
	license := "NVIDIA"
	if open {
		license = "Dual MIT/GPL"
	}
	var code strings.Builder
	for i, kv := range []string{"version=" + u, "license=" + license, "name=nvidia", "description=gpuhost stand-in for Canonical's precompiled NVIDIA module"} {
		fmt.Fprintf(&code, "static const char modinfo_%d[] __attribute__((section(\".modinfo\"), used, aligned(1))) = %q;\n", i, kv)
	}
	name := "nvidia-" + u + ".ko"
	if open {
		name = "nvidia-open-" + u + ".ko"
	}
	return b.compiled(name, code.String(), "-c")
}

// compiled runs the C compiler on code with args and returns the output,
// cached in the work directory by name.
func (b *suiteBuilder) compiled(name, code string, args ...string) ([]byte, error) {
	out := filepath.Join(b.work, "cc", name)
	if data, err := os.ReadFile(out); err == nil {
		return data, nil
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return nil, err
	}
	src := out + ".c"
	if err := os.WriteFile(src, []byte(code), 0o644); err != nil {
		return nil, err
	}
	cmd := exec.Command("cc", append(args, "-o", out, src)...)
	if b, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("cc %s: %w: %s", name, err, b)
	}
	return os.ReadFile(out)
}
