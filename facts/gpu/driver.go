package gpu

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// Bounds on the module walk: a hostile tree may hold deep or huge
// directories under /lib/modules.
const (
	maxKernels      = 64
	maxModuleDepth  = 6
	maxModuleDirEnt = 20000
	maxModprobeConf = 512
)

type driverCollector struct{}

// driverPrefixes are package names (or prefixes ending in "-") that carry the
// driver, its user-space library or its kernel modules.
var driverPrefixes = []string{
	"nvidia-driver", "nvidia-open", "cuda-drivers", "libnvidia-ml1", "libnvidia-compute-",
	"nvidia-utils-", "nvidia-headless-", "nvidia-kernel-", "nvidia-dkms-", "linux-modules-nvidia-",
	"linux-objects-nvidia-", "nvidia-smi", "nvidia-fabricmanager", "nvidia-persistenced",
	"nvidia-firmware-", "firmware-nvidia-gsp", "libnvidia-cfg1",
}

// versionSources say, best first, which package's version is the driver's:
// the NVML library itself, then the packages that pull it in.
var versionSources = []string{
	"libnvidia-ml1", "libnvidia-compute-", "nvidia-utils-", "nvidia-driver", "nvidia-headless-",
	"cuda-drivers", "nvidia-open", "nvidia-kernel-", "nvidia-dkms-", "linux-modules-nvidia-",
}

func matchesPrefix(name string, prefixes []string) bool {
	for _, p := range prefixes {
		if name == strings.TrimSuffix(p, "-") || strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// CollectDriver reads the driver stack: the driver is found among the
// installed packages; nouveau's blacklisting may be on the kernel's
// command line (k); persistenced and fabricmanager are judged by the
// enabled units (units). It needs the package database: without it, "no
// driver installed" could not be told from "could not look", so
// pkgStatus and pkgReason are the packages collector's outcome ("" when
// it did not run). k and units are nil when their collectors read nothing.
func CollectDriver(ctx context.Context, env *collect.Env, installed []facts.Package, pkgStatus, pkgReason string, k *facts.Kernel, units *facts.Systemd) (*facts.GPUDriver, error) {
	if pkgStatus != collect.StatusOK {
		reason := "the packages collector did not run"
		if pkgStatus != "" {
			reason = fmt.Sprintf("the packages collector is %s: %s", pkgStatus, pkgReason)
		}
		return nil, collect.Unavailable(reason)
	}
	d := &facts.GPUDriver{Packages: []facts.Package{}, Modules: map[string][]string{}}

	for _, p := range installed {
		if matchesPrefix(p.Name, driverPrefixes) {
			d.Packages = append(d.Packages, p)
		}
	}
	for _, src := range versionSources {
		for _, p := range d.Packages {
			if !matchesPrefix(p.Name, []string{src}) {
				continue
			}
			if v := UpstreamVersion(p.Version); v != "" {
				if b, ok := Branch(v); ok {
					d.Version, d.Branch = v, b
				}
			}
			if d.Version != "" {
				break
			}
		}
		if d.Version != "" {
			break
		}
	}
	if len(d.Packages) > 0 {
		d.Flavor = "proprietary"
		for _, p := range d.Packages {
			if p.Name == "nvidia-open" || strings.HasSuffix(p.Name, "-open") || strings.Contains(p.Name, "-open-") ||
				strings.Contains(p.Name, "kernel-open") {
				d.Flavor = "open"
			}
		}
	}
	if d.Branch > 0 {
		d.MaxCUDA, _ = MaxCUDA(d.Branch)
	}

	if err := modules(ctx, env, d); err != nil {
		return nil, err
	}
	if err := nouveau(env, k, d); err != nil {
		return nil, err
	}
	if units != nil {
		d.PersistencedEnabled = slices.Contains(units.Enabled, "nvidia-persistenced.service")
		d.FabricManagerEnabled = slices.Contains(units.Enabled, "nvidia-fabricmanager.service")
	}
	if err := cudaToolkit(env, installed, d); err != nil {
		return nil, err
	}
	return d, nil
}

// UpstreamVersion strips the epoch and the Debian revision from a dpkg
// version: "1:535.261.03-1" -> "535.261.03".
func UpstreamVersion(v string) string {
	if _, after, ok := strings.Cut(v, ":"); ok {
		v = after
	}
	if i := strings.LastIndexByte(v, '-'); i >= 0 {
		v = v[:i]
	}
	if i := strings.IndexAny(v, "~+"); i >= 0 {
		v = v[:i]
	}
	return v
}

// modules lists nvidia*.ko* files for each installed kernel, looking only
// where packages and DKMS put them.
func modules(ctx context.Context, env *collect.Env, d *facts.GPUDriver) error {
	entries, err := env.FS.ReadDir("/lib/modules")
	if sysroot.IsNotExist(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("listing kernels: %w", err)
	}
	budget := maxModuleDirEnt
	kernels := 0
	for _, e := range entries {
		if !e.IsDir() || !validName(e.Name()) {
			continue
		}
		if kernels++; kernels > maxKernels {
			return fmt.Errorf("listing kernels: %s holds more than %d kernel directories", env.FS.Display("/lib/modules"), maxKernels)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		kdir := path.Join("/lib/modules", e.Name())
		found := []string{}
		roots := []string{"updates", "extra", "kernel/drivers/video"}
		// Ubuntu's precompiled modules sit in kernel/nvidia-<branch>[srv]/.
		if ents, err := env.FS.ReadDir(kdir + "/kernel"); err == nil {
			for _, k := range ents {
				if k.IsDir() && strings.HasPrefix(k.Name(), "nvidia") {
					roots = append(roots, "kernel/"+k.Name())
				}
			}
		}
		for _, r := range roots {
			if err := walkModules(env, path.Join(kdir, r), 0, &budget, &found); err != nil {
				return err
			}
		}
		slices.Sort(found)
		d.Modules[e.Name()] = slices.Compact(found)
	}
	return nil
}

func validName(n string) bool {
	return n != "" && n != "." && n != ".." && !strings.ContainsRune(n, '/')
}

func walkModules(env *collect.Env, dir string, depth int, budget *int, found *[]string) error {
	if depth > maxModuleDepth {
		return nil
	}
	entries, err := env.FS.ReadDir(dir)
	if err != nil {
		if sysroot.IsNotExist(err) {
			return nil
		}
		return fmt.Errorf("listing kernel modules: %w", err)
	}
	for _, e := range entries {
		if *budget--; *budget < 0 {
			return fmt.Errorf("listing kernel modules: more than %d entries under %s", maxModuleDirEnt, env.FS.Display("/lib/modules"))
		}
		name := e.Name()
		if !validName(name) {
			continue
		}
		p := path.Join(dir, name)
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			// Links are not followed: they could loop or point anywhere.
		case e.IsDir():
			if err := walkModules(env, p, depth+1, budget, found); err != nil {
				return err
			}
		case e.Type().IsRegular() && strings.HasPrefix(name, "nvidia") && isModuleFile(name):
			*found = append(*found, p)
		}
	}
	return nil
}

func isModuleFile(name string) bool {
	for _, ext := range []string{".ko", ".ko.zst", ".ko.xz", ".ko.gz"} {
		if strings.HasSuffix(name, ext) {
			return true
		}
	}
	return false
}

// nouveau decides whether nouveau is kept from loading: a "blacklist nouveau"
// line in a modprobe.d file, or the kernel command line's blacklists.
func nouveau(env *collect.Env, k *facts.Kernel, d *facts.GPUDriver) error {
	if k != nil {
		for _, arg := range k.Cmdline {
			k, v, _ := strings.Cut(arg, "=")
			if k != "modprobe.blacklist" && k != "rd.driver.blacklist" && k != "module_blacklist" {
				continue
			}
			if slices.Contains(strings.Split(v, ","), "nouveau") {
				d.NouveauBlacklisted = true
				d.NouveauSource = "kernel command line: " + arg
				return nil
			}
		}
	}
	seen := 0
	for _, dir := range []string{"/etc/modprobe.d", "/usr/lib/modprobe.d", "/lib/modprobe.d", "/run/modprobe.d"} {
		files, err := env.FS.Glob(dir + "/*.conf")
		if err != nil {
			return fmt.Errorf("listing %s: %w", env.FS.Display(dir), err)
		}
		for _, name := range files {
			if seen++; seen > maxModprobeConf {
				return fmt.Errorf("reading modprobe configuration: more than %d files", maxModprobeConf)
			}
			data, err := env.FS.ReadFileLimit(name, 1<<20)
			if err != nil {
				if sysroot.IsNotExist(err) {
					continue
				}
				return fmt.Errorf("reading %s: %w", env.FS.Display(name), err)
			}
			if blacklists(string(data), "nouveau") {
				d.NouveauBlacklisted = true
				d.NouveauSource = env.FS.Display(name)
				return nil
			}
		}
	}
	return nil
}

// blacklists reports whether modprobe.d text blacklists module, or makes
// loading it run /bin/false or /bin/true.
func blacklists(text, module string) bool {
	for line := range strings.Lines(text) {
		line, _, _ = strings.Cut(line, "#")
		f := strings.Fields(line)
		switch {
		case len(f) == 2 && f[0] == "blacklist" && f[1] == module:
			return true
		case len(f) >= 3 && f[0] == "install" && f[1] == module && (path.Base(f[2]) == "false" || path.Base(f[2]) == "true"):
			return true
		}
	}
	return false
}

// cudaToolkit finds the newest installed CUDA toolkit, by package or by
// /usr/local/cuda/version.json.
func cudaToolkit(env *collect.Env, pkgs []facts.Package, d *facts.GPUDriver) error {
	best, source := "", ""
	consider := func(v, src string) {
		if v != "" && (best == "" || CompareVersions(v, best) > 0) {
			best, source = v, src
		}
	}
	for _, p := range pkgs {
		consider(toolkitVersion(p), p.Name)
	}
	const versionJSON = "/usr/local/cuda/version.json"
	data, err := env.FS.ReadFileLimit(versionJSON, 1<<20)
	switch {
	case sysroot.IsNotExist(err):
	case err != nil:
		return fmt.Errorf("reading %s: %w", env.FS.Display(versionJSON), err)
	default:
		var doc struct {
			CUDA struct {
				Version string `json:"version"`
			} `json:"cuda"`
		}
		if err := json.Unmarshal(data, &doc); err != nil {
			return fmt.Errorf("parsing %s: %w", env.FS.Display(versionJSON), err)
		}
		consider(majorMinor(doc.CUDA.Version), env.FS.Display(versionJSON))
	}
	d.CUDAToolkitVersion, d.CUDAToolkitSource = best, source
	return nil
}

// toolkitVersion returns the CUDA MAJOR.MINOR a package installs:
// cuda-toolkit-12-2 -> 12.2 (by name), nvidia-cuda-toolkit 11.8.89~11.8.0-5 ->
// 11.8 and cuda-toolkit 12.4.1-1 -> 12.4 (by version).
func toolkitVersion(p facts.Package) string {
	for _, prefix := range []string{"cuda-toolkit-", "cuda-runtime-", "cuda-cudart-", "cuda-"} {
		rest, ok := strings.CutPrefix(p.Name, prefix)
		if !ok {
			continue
		}
		major, minor, ok := strings.Cut(rest, "-")
		if ok && isDigits(major) && isDigits(minor) {
			return major + "." + minor
		}
	}
	if p.Name == "cuda-toolkit" || p.Name == "nvidia-cuda-toolkit" {
		return majorMinor(UpstreamVersion(p.Version))
	}
	return ""
}

func isDigits(s string) bool {
	return s != "" && len(s) <= 4 && strings.Trim(s, "0123456789") == ""
}

// majorMinor keeps MAJOR.MINOR of a dotted version; empty when it has none.
func majorMinor(v string) string {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) < 2 || !isDigits(parts[0]) || !isDigits(parts[1]) {
		return ""
	}
	return parts[0] + "." + parts[1]
}

// CompareVersions compares dotted numeric versions ("12.10" > "12.9").
func CompareVersions(a, b string) int {
	pa, pb := strings.Split(a, "."), strings.Split(b, ".")
	for i := range max(len(pa), len(pb)) {
		var x, y int
		if i < len(pa) {
			x, _ = strconv.Atoi(pa[i])
		}
		if i < len(pb) {
			y, _ = strconv.Atoi(pb[i])
		}
		if x != y {
			if x < y {
				return -1
			}
			return 1
		}
	}
	return 0
}
