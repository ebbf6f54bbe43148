package images

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/builder/gpu"
	"github.com/gpuhost/gpuhost/containers/seed/seedtest"
	"github.com/gpuhost/gpuhost/containers/trivy"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/internal/testutil/nvidiarepo"
	"github.com/gpuhost/gpuhost/internal/testutil/ubunturepo"
	"github.com/gpuhost/gpuhost/manifest"
	"github.com/gpuhost/gpuhost/manifest/lock"
	"github.com/gpuhost/gpuhost/reports"
)

// ubuntuTemplate is one production Ubuntu template and the stand-ins its
// bake reads from.
type ubuntuTemplate struct {
	file, pins, params string
	suite, distro      string
	// version is the release as os-release and trivy's buckets name it.
	version string
	// archiveDriver bakes with driver_source ubuntu-archive: Canonical's
	// driver and precompiled modules from the restricted component, CUDA
	// from NVIDIA's repository.
	archiveDriver bool
}

// jammy takes the driver from NVIDIA's CUDA repository (DKMS), noble from
// the archive's restricted component: each driver source bakes for real.
var ubuntuTemplates = []ubuntuTemplate{
	{file: "ubuntu-22.04-gpu.pkr.hcl", pins: "pins-ubuntu-22.04.pkrvars.hcl", params: "params-ubuntu-22.04.yaml", suite: "jammy", distro: "ubuntu2204", version: "22.04"},
	{file: "ubuntu-24.04-gpu.pkr.hcl", pins: "pins-ubuntu-24.04.pkrvars.hcl", params: "params-ubuntu-24.04.yaml", suite: "noble", distro: "ubuntu2404", version: "24.04", archiveDriver: true},
}

// archiveBranch is the branch the archive-driver bake installs: the
// template's default.
const archiveBranch = "580"

// archiveParams writes the template's params with the driver pin moved to
// the package an ubuntu-archive build installs at the pins file's version,
// as a build of another driver passes -var params=FILE.
func archiveParams(t *testing.T, tp ubuntuTemplate) (path, version string) {
	t.Helper()
	version = value(t, tp.pins, parseHCL(t, tp.pins).Attributes["archive_driver_versions"].Expr, nil).AsValueMap()[archiveBranch].AsString()
	data, err := os.ReadFile(tp.params)
	if err != nil {
		t.Fatal(err)
	}
	cudaPin := regexp.MustCompile(`(?m)^  nvidia-driver-` + archiveBranch + `-open: .*$`)
	if !cudaPin.Match(data) {
		t.Fatalf("%s pins no nvidia-driver-%s-open to move", tp.params, archiveBranch)
	}
	data = cudaPin.ReplaceAll(data, []byte("  nvidia-headless-no-dkms-"+archiveBranch+"-server-open: "+version))
	path = filepath.Join(t.TempDir(), "params-archive.yaml")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, version
}

// TestE2EUbuntuStandInBake bakes each production Ubuntu template with real
// Packer and the plugin installed offline, against stand-ins of what a
// release pipeline reaches: an Ubuntu-shaped archive on 127.0.0.1
// (internal/testutil/ubunturepo: jammy and noble, signed, Debian's
// payloads under Ubuntu's names and versions), NVIDIA's CUDA and
// libnvidia-container repositories for the release (nvidiarepo, newer
// builds of every pin published beside it) and nvcr.io (an in-process
// registry serving each branch's base at its tag). mmdebstrap bootstraps
// from the archive; every install, pin, hold and check of the plan runs
// through apt and dpkg; the gate judges the image with the template's own
// block (fail_on high) and the demo DB's Ubuntu advisories, and passes.
// On jammy the test then breaks each guarantee once and the bake fails,
// naming the package; and `gpuhost lock` and a locked bake give the
// first bake's tree digest.
func TestE2EUbuntuStandInBake(t *testing.T) {
	if os.Getenv("GPUHOST_E2E") != "1" {
		t.Skip("end-to-end bake of the Ubuntu templates: set GPUHOST_E2E=1 (make e2e); needs root and the Debian mirror")
	}
	testutil.Root(t)
	// Beside TestE2EDebian12's boots (see there).
	t.Parallel()
	for _, tool := range [][2]string{{"mmdebstrap", "mmdebstrap"}, {"dpkg-deb", "dpkg"}, {"gpg", "gpg"}, {"gpgconf", "gpgconf"}, {"cc", "gcc"}, {"apt-get", "apt"}} {
		testutil.Tool(t, tool[0], tool[1])
	}
	packer, env := installPlugin(t)
	// A fixed SOURCE_DATE_EPOCH, so that a locked bake can be compared
	// with the first byte for byte.
	env = append(env, "SOURCE_DATE_EPOCH=1735689600")
	cache := envOr("GPUHOST_E2E_APT_CACHE", filepath.Join(os.TempDir(), "gpuhost-e2e-apt-cache"))
	archive, mirror := ubunturepo.Start(t, ubunturepo.Options{Cache: cache + "-ubuntu-archive"})
	fx, err := trivy.ReadFixture("trivy-db-demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	db := writeDB(t, fx)
	registry := seedtest.New(t)
	dkmsCert, dkmsKey, _ := testutil.WriteCert(t, t.TempDir(), testutil.CertSpec{Key: "rsa2048"})
	agentBin := mustAbs(t, envOr("GPUHOST_AGENT", filepath.Join(filepath.Dir(mustAbs(t, envOr("GPUHOST_BIN", "../bin/gpuhost"))), "gpuhost-agent")))

	for _, tp := range ubuntuTemplates {
		t.Run(tp.file, func(t *testing.T) {
			// The two releases bake side by side, each with its own apt
			// cache (apt locks the one it is given).
			t.Parallel()
			nv, nvBase := nvidiarepo.Start(t, nvidiarepo.Options{Official: gpu.DefaultCUDARepositories, Distro: tp.distro})
			vars := map[string]string{
				"mirror":                   mirror,
				"keyring":                  archive.Keyring,
				"target_kernel":            archive.Kernel,
				"apt_cache_dir":            cache + "-" + tp.suite,
				"trivy_db":                 db,
				"ngc_registry":             registry.Host,
				"ngc_bases":                serveBases(t, registry, tp),
				"dkms_signing_key":         dkmsKey,
				"dkms_signing_certificate": dkmsCert,
				"lock_file":                "",
				"agent_bin":                agentBin,
				// With the lock, what makes a second bake's tree the same
				// as the first's, disk identifiers and all.
				"disk_id_seed": "gpuhost-e2e-" + tp.suite,
			}
			maps.Copy(vars, nvidiaVars(nv, nvBase))
			if tp.archiveDriver {
				// Canonical's modules come signed; DKMS does not run.
				var version string
				tp.params, version = archiveParams(t, tp)
				maps.Copy(vars, map[string]string{"driver_source": "ubuntu-archive", "params": tp.params,
					"dkms_signing_key": "", "dkms_signing_certificate": ""})
				t.Logf("driver from the archive's restricted component: %s %s", archiveBranch, version)
			}
			// Jammy's pinned bake, then its locked ones, are the run's
			// longest chain (packerCmd).
			bakeAt := func(nice int) ubuntuBakeFunc {
				return func(t *testing.T, name, template string, change map[string]string) (string, string, error) {
					t.Helper()
					out := filepath.Join(t.TempDir(), name)
					args := []string{"build", "-force", "-var-file=" + tp.pins, "-var", "output_dir=" + out}
					all := maps.Clone(vars)
					maps.Copy(all, change)
					for _, k := range slices.Sorted(maps.Keys(all)) {
						args = append(args, "-var", k+"="+all[k])
					}
					start := time.Now()
					b, err := packerCmd(env, nice, packer, append(args, template)...).CombinedOutput()
					t.Logf("bake %s of %s took %s", name, tp.file, time.Since(start).Round(time.Second))
					if err == nil {
						logStepTimings(t, b)
					}
					return filepath.Join(out, "rootfs"), string(b), err
				}
			}
			first := niceSide
			if tp.suite == "jammy" {
				first = niceChain
			}
			tree, log, err := bakeAt(first)(t, "pinned", tp.file, nil)
			if err != nil {
				t.Fatalf("packer build: %v\n%s", err, log)
			}
			checkUbuntuImage(t, tp, tree, log, archive, nv)
			if tp.suite != "jammy" {
				cveFails(t, tp, tree, fx)
				return
			}
			// One release boots, for time: noble's disk is the same
			// layout from the same builder, baked and gated above. The
			// boot runs beside the rebakes, which read only the tree.
			t.Run("boots under TCG", func(t *testing.T) {
				t.Parallel()
				ubuntuBoot(t, tp, filepath.Dir(tree), gateReport(t, log), archive)
			})
			t.Run("rebakes", func(t *testing.T) {
				t.Parallel()
				ubuntuBreaks(t, tp, bakeAt(niceSide), nv, nvBase)
			})
			t.Run("locks", func(t *testing.T) {
				// Beside the rebakes, with an apt cache (and so a bootstrap
				// cache) of its own: apt locks the archives directory it is
				// given.
				t.Parallel()
				ownCache := func(t *testing.T, name, template string, change map[string]string) (string, string, error) {
					c := maps.Clone(change)
					c["apt_cache_dir"] = cache + "-" + tp.suite + "-locks"
					return bakeAt(niceChain)(t, name, template, c)
				}
				l := lockedBake(t, tree, ownCache, tp.file, "base-files", "dkms", "nvidia-driver-580-open", "cuda-keyring", "nvidia-container-toolkit")
				t.Run("a lock the sources cannot meet fails naming the package", func(t *testing.T) {
					brokenLocks(t, l, "cuda-cudart-13-0", "cuda-toolkit-13-0", func(name, lockFile string) (string, error) {
						_, log, err := ownCache(t, name, tp.file, map[string]string{"lock_file": lockFile})
						return log, err
					})
				})
			})
		})
	}
}

// nvidiaVars point a template at an NVIDIA stand-in and pin its keys.
func nvidiaVars(l *nvidiarepo.Layout, base string) map[string]string {
	return map[string]string{
		"cuda_repositories":            base + "/" + l.CUDARepos,
		"container_toolkit_repository": base + "/" + l.Toolkit,
		"container_toolkit_key":        base + "/" + l.ToolkitKey,
		"cuda_keyring_sha256":          l.KeyringSHA256,
		"container_toolkit_key_sha256": l.ToolkitKeySHA256,
	}
}

// serveBases serves every branch's NGC base of the template's pins file
// under its nvcr.io name, an Ubuntu base of the release, and returns the
// ngc_bases value that pins what is served, as a reviewer would.
func serveBases(t *testing.T, reg *seedtest.Registry, tp ubuntuTemplate) string {
	t.Helper()
	bases := value(t, tp.pins, parseHCL(t, tp.pins).Attributes["ngc_bases"].Expr, nil)
	img := seedtest.Base(t, seedtest.Distro{ID: "ubuntu", VersionID: tp.version, Packages: []string{"base-files 13ubuntu10", "bash 5.1-6ubuntu1"}})
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	var served []string
	for branch, b := range bases.AsValueMap() {
		ref := b.GetAttr("ref").AsString()
		repo, tag, ok := strings.Cut(strings.TrimPrefix(ref, "nvcr.io/"), ":")
		if !ok || !strings.HasPrefix(ref, "nvcr.io/") {
			t.Fatalf("%s: ngc_bases[%s].ref %q is not nvcr.io/REPO:TAG", tp.pins, branch, ref)
		}
		reg.Write(t, repo, tag, img)
		served = append(served, fmt.Sprintf("%q = { ref = %q, digest = %q }", branch, ref, d.String()))
	}
	slices.Sort(served)
	return "{" + strings.Join(served, ", ") + "}"
}

// checkUbuntuImage reads the baked tree: Ubuntu's release and versions,
// the pins installed and held with the newer builds kept out, the module
// DKMS built, and the gate's verdict.
func checkUbuntuImage(t *testing.T, tp ubuntuTemplate, tree, log string, archive *ubunturepo.Archive, nv *nvidiarepo.Layout) {
	t.Helper()
	if !strings.Contains(log, "gpuhost-gpu: all pins installed and held, payload at the pinned versions") {
		t.Errorf("the plan did not finish its checks:\n%s", log)
	}
	osRelease, err := os.ReadFile(filepath.Join(tree, "etc/os-release"))
	if err != nil || !strings.Contains(string(osRelease), "VERSION_ID=\""+tp.version+"\"") || !strings.Contains(string(osRelease), "ID=ubuntu") {
		t.Errorf("the image's os-release is not Ubuntu %s (%v):\n%s", tp.version, err, osRelease)
	}
	status := dpkgStatus(t, filepath.Join(tree, "var/lib/dpkg/status"))
	// What the archive publishes under Ubuntu's versions, as installed.
	for _, name := range []string{"openssh-server", "sudo", "systemd", "containerd", "auditd", "nftables", "base-files"} {
		if want := archive.Versions[tp.suite][name]; status[name].version != want {
			t.Errorf("%s is %q, the %s archive publishes %q", name, status[name].version, tp.suite, want)
		}
	}
	held := map[string]string{
		"cuda-toolkit-13-0":             nvidiarepo.CUDAVersions["13.0"][0],
		"cuda-cudart-13-0":              nvidiarepo.CUDAComponents[nvidiarepo.CUDAVersions["13.0"][0]]["cuda-cudart"],
		"cuda-nvcc-13-0":                nvidiarepo.CUDAComponents[nvidiarepo.CUDAVersions["13.0"][0]]["cuda-nvcc"],
		"nvidia-container-toolkit":      nvidiarepo.ToolkitVersions[1],
		"libnvidia-container1":          nvidiarepo.ToolkitVersions[1],
		"linux-image-" + archive.Kernel: "",
	}
	modules := filepath.Join(tree, "lib/modules", archive.Kernel, "updates/dkms/nvidia.ko*")
	if tp.archiveDriver {
		// The archive's older build, which -updates has a newer one of,
		// and the modules built for it.
		v := archive.Versions[tp.suite]["nvidia-headless-no-dkms-"+archiveBranch+"-server-open"]
		if newer := archive.Versions[tp.suite+"-updates"]["nvidia-headless-no-dkms-"+archiveBranch+"-server-open"]; v == "" || newer == "" || newer == v {
			t.Fatalf("the archive publishes nvidia-headless-no-dkms-%s-server-open at %q and, in -updates, %q; want two builds", archiveBranch, v, newer)
		}
		for _, name := range []string{"nvidia-headless-no-dkms-", "nvidia-utils-", "libnvidia-compute-", "nvidia-kernel-common-"} {
			suffix := "-server"
			if name == "nvidia-headless-no-dkms-" {
				suffix = "-server-open"
			}
			// Only the two the plan names are held; apt keeps the rest at
			// their "=" dependencies.
			if name == "nvidia-headless-no-dkms-" || name == "nvidia-utils-" {
				held[name+archiveBranch+suffix] = v
			} else if got := status[name+archiveBranch+suffix].version; got != v {
				t.Errorf("%s%s%s is %q, want %s (the source pin keeps -updates' build out)", name, archiveBranch, suffix, got, v)
			}
		}
		held[ubunturepo.ArchiveModulesPackage(archiveBranch, true, archive.Kernel)] = ""
		modules = filepath.Join(tree, "lib/modules", archive.Kernel, "kernel/nvidia-"+archiveBranch+"srv-open/nvidia.ko")
		// Canonical's modules come built: DKMS has no nvidia module to
		// build (the stand-in's CUDA meta package still pulls dkms in, as
		// a dependency the distribution provides).
		if built, _ := filepath.Glob(filepath.Join(tree, "lib/modules", archive.Kernel, "updates/dkms/nvidia*")); len(built) > 0 {
			t.Errorf("DKMS built %v: Canonical's modules need none", built)
		}
		if _, err := os.Stat(filepath.Join(tree, "var/lib/dkms/nvidia")); err == nil {
			t.Error("DKMS registered an nvidia module: Canonical's modules need none")
		}
	} else {
		held["nvidia-driver-580-open"] = nv.DriverVersions["580"][0]
		held["linux-headers-"+archive.Kernel] = ""
	}
	for name, want := range held {
		p := status[name]
		if want != "" && p.version != want {
			t.Errorf("%s is %q, want %s (the newer builds the repositories publish must stay out)", name, p.version, want)
		}
		if p.want != "hold" {
			t.Errorf("%s is not held (%q)", name, p.want)
		}
	}
	if mods, _ := filepath.Glob(modules); len(mods) == 0 {
		t.Errorf("no nvidia module for %s (%s)", archive.Kernel, modules)
	}
	rep := gateReport(t, log)
	t.Logf("%s gate: %s", tp.file, gateSummary(rep))
	var failed, baseline []string
	for _, r := range rep.Results {
		switch {
		case r.Status != reports.StatusFail:
		case cisBaseline(r):
			baseline = append(baseline, r.ID)
		default:
			failed = append(failed, r.ID)
		}
	}
	if len(failed) > 0 {
		t.Errorf("the gate failed %v: %s", failed, gateSummary(rep))
	}
	t.Logf("%s gate: CIS baseline failing %v", tp.file, baseline)
}

// gateReport reads the JSON report the gate wrote, from the path its log
// names.
func gateReport(t *testing.T, log string) reports.Report {
	t.Helper()
	m := regexp.MustCompile(`gpuhost-gate: reports: (.*)`).FindStringSubmatch(log)
	if m == nil {
		t.Fatalf("the gate wrote no reports:\n%s", log)
	}
	for _, p := range strings.Split(strings.TrimSpace(m[1]), ", ") {
		if !strings.HasSuffix(p, ".json") {
			continue
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var r reports.Report
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		return r
	}
	t.Fatalf("no JSON report among %s", m[1])
	return reports.Report{}
}

// gateSummary is a report's counts and the ids of what did not pass.
func gateSummary(r reports.Report) string {
	var notPassed []string
	for _, res := range r.Results {
		if res.Status != reports.StatusPass {
			notPassed = append(notPassed, res.ID+" "+res.Status)
		}
	}
	slices.Sort(notPassed)
	s := r.Summary.ByStatus
	return fmt.Sprintf("%d checks: %d pass, %d fail, %d skip, %d waived; not passed: %s",
		r.Summary.Total, s["pass"], s["fail"], s["skip"], s["waived"], strings.Join(notPassed, ", "))
}

// cveFails scans the baked tree as the gate does with a DB that also has
// noble's fix of CVE-2024-6387 (regreSSHion, USN-6859-1), which the
// stand-in's openssh, Debian's 9.2p1 under noble's name, predates, and
// the template's params with CVEs failing from high up, as a team that
// gates on high does: the CVE check must fail naming the package and the
// advisory.
func cveFails(t *testing.T, tp ubuntuTemplate, tree string, fx trivy.Fixture) {
	t.Helper()
	fx.Advisories = append(slices.Clone(fx.Advisories), trivy.FixtureAdvisory{Bucket: "ubuntu " + tp.version, Package: "openssh", ID: "CVE-2024-6387", Fixed: "1:9.6p1-3ubuntu13.3"})
	params, err := os.ReadFile(tp.params)
	if err != nil {
		t.Fatal(err)
	}
	highParams := filepath.Join(t.TempDir(), "params.yaml")
	if err := os.WriteFile(highParams, append(params, "cve_fail_on: high\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	gpuhost := mustAbs(t, envOr("GPUHOST_BIN", "../bin/gpuhost"))
	cmd := exec.Command(gpuhost, "scan", "rootfs", tree, "--params", highParams, "--waivers", "waivers-ubuntu-"+tp.version+".yaml",
		"--trivy-db", writeDB(t, fx), "--fail-on", "high", "--format", "json")
	out, err := cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("gpuhost scan rootfs with CVE-2024-6387 in the DB: %v, want exit 1\n%s", err, out)
	}
	var r reports.Report
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatal(err)
	}
	for _, res := range r.Results {
		if res.ID == "GH-SC-001" {
			msg := strings.Join(res.Messages, "; ")
			if res.Status != reports.StatusFail || !strings.Contains(msg, "CVE-2024-6387") || !strings.Contains(msg, "openssh") {
				t.Errorf("GH-SC-001 is %s: %s; want a failure naming openssh and CVE-2024-6387", res.Status, msg)
			}
			t.Logf("GH-SC-001 with noble's fix of CVE-2024-6387 in the DB: %s", msg)
			return
		}
	}
	t.Error("the scan has no GH-SC-001")
}

// lockOf writes the lock of the image baked at tree, as `gpuhost lock
// --from` does from its manifest, and returns it and its path.
func lockOf(t *testing.T, tree string) (*lock.Lock, string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(tree, "etc/gpuhost/manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := manifest.Decode(data)
	if err != nil {
		t.Fatalf("the bake's manifest: %v", err)
	}
	l, err := lock.FromManifest(m)
	if err != nil {
		t.Fatalf("locking the bake: %v", err)
	}
	out, err := l.Encode()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "ubuntu.lock")
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("lock: %d packages, %d sources, %d keyrings", len(l.Packages), len(l.Sources), len(l.Keyrings))
	return l, p
}
