package gpu

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/runtime"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// The CDI kind the NVIDIA Container Toolkit's specs declare, and the device
// of it that stands for every GPU.
const (
	cdiKind = "nvidia.com/gpu"
	cdiAll  = cdiKind + "=all"
)

// containerdNamespace is where kubelet's CRI keeps its images, and where the
// first-boot unit imports the seeded ones.
const containerdNamespace = "k8s.io"

// containerdSocket is containerd's default address, which ctr dials.
const containerdSocket = "/run/containerd/containerd.sock"

// ctrPaths are where a host's packages put ctr.
var ctrPaths = []string{"/usr/bin/ctr", "/usr/local/bin/ctr", "/bin/ctr"}

// container is step 2: the CDI spec names every GPU, and containerd starts
// a container given nvidia.com/gpu=all in which nvidia-smi lists every GPU
// NVML lists, no more and no fewer.
func (s *session) container(ctx context.Context) facts.ValidationStep {
	step := facts.ValidationStep{Name: StepContainer, Required: true}
	specs, err := runtime.CollectCDISpecs(ctx, s.env.FS)
	if err != nil {
		return failed(step, "a CDI spec cannot be read: "+err.Error())
	}
	ours := slices.DeleteFunc(specs, func(sp facts.CDISpec) bool { return sp.Kind != cdiKind })
	if len(ours) > 0 {
		if problem := s.checkCDI(ours, &step); problem != "" {
			return failed(step, problem)
		}
		// Each GPU's verdict is the container's, once it has run.
		step.GPUs = nil
	}
	ctr, why := s.findCtr()
	if ctr == "" {
		return notRun(step, why)
	}
	if len(ours) == 0 {
		return failed(step, fmt.Sprintf("containerd is installed, but no CDI spec in %s declares kind %s (nvidia-ctk cdi generate writes one)",
			strings.Join(displayAll(s.env.FS, runtime.CDISpecDirs(s.env.FS)), " or "), cdiKind))
	}
	if missing := s.missingDeviceNodes(); missing != "" {
		return notRun(step, "no GPU device nodes to give a container: "+missing)
	}
	image, why := s.containerImage(ctx, ctr)
	if image == "" {
		return notRun(step, why)
	}
	return s.runContainer(ctx, step, ctr, image)
}

// checkCDI holds the specs of kind nvidia.com/gpu to the GPUs NVML lists:
// "all", and each GPU by its index or its UUID (nvidia-ctk names devices by
// either, as --device-name-strategy says), and no GPU that is gone.
func (s *session) checkCDI(specs []facts.CDISpec, step *facts.ValidationStep) string {
	names := map[string]string{} // device name -> the file that declares it
	for _, sp := range specs {
		for _, d := range sp.Devices {
			if _, seen := names[d]; !seen {
				names[d] = sp.File
			}
		}
	}
	var problems []string
	if _, ok := names["all"]; !ok {
		problems = append(problems, fmt.Sprintf("no device \"all\" (%s)", cdiAll))
	}
	known := map[string]bool{}
	bad := 0
	for _, g := range s.gpus {
		idx := strconv.Itoa(g.index)
		known[idx], known[g.uuid] = true, true
		var as []string
		for _, n := range []string{idx, g.uuid} {
			if f, ok := names[n]; ok {
				as = append(as, fmt.Sprintf("%s=%s in %s", cdiKind, n, f))
			}
		}
		if len(as) == 0 {
			bad++
			step.GPUs = append(step.GPUs, g.result(facts.ValidationFailed, fmt.Sprintf("no CDI device names it (%s=%s or %s=%s)", cdiKind, idx, cdiKind, g.uuid)))
			continue
		}
		step.GPUs = append(step.GPUs, g.result(facts.ValidationPassed, strings.Join(as, ", ")))
	}
	if bad > 0 {
		problems = append(problems, fmt.Sprintf("%d of the %d GPUs NVML lists have no CDI device", bad, len(s.gpus)))
	}
	for _, n := range slices.Sorted(maps.Keys(names)) {
		if gpuDeviceName(n) && !known[n] {
			problems = append(problems, fmt.Sprintf("%s declares %s=%s, a GPU NVML does not list (a stale spec: regenerate it)", names[n], cdiKind, n))
		}
	}
	if len(problems) == 0 {
		return ""
	}
	return "the CDI spec does not match the GPUs: " + strings.Join(problems, "; ")
}

// gpuDeviceName reports whether a CDI device name stands for one whole GPU:
// an index or a GPU UUID, not "all" or a MIG device.
func gpuDeviceName(n string) bool {
	if strings.HasPrefix(n, "GPU-") {
		return true
	}
	_, err := strconv.Atoi(n)
	return err == nil
}

func displayAll(fsys sysroot.FS, paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = fsys.Display(p)
	}
	return out
}

// findCtr finds ctr and containerd's socket on the host, or says why the
// container step cannot run.
func (s *session) findCtr() (path, why string) {
	for _, p := range ctrPaths {
		if info, err := s.env.FS.Stat(p); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
			path = p
			break
		}
	}
	if path == "" {
		return "", "no container runtime: ctr (containerd) is not installed (looked for " + strings.Join(displayAll(s.env.FS, ctrPaths), ", ") + ")"
	}
	if info, err := s.env.FS.Stat(containerdSocket); err != nil || info.Mode()&os.ModeSocket == 0 {
		return "", "no container runtime: containerd is not running (no socket at " + s.env.FS.Display(containerdSocket) + ")"
	}
	return path, ""
}

// missingDeviceNodes names the device nodes a GPU container needs that the
// host lacks, or "" when every one is there.
func (s *session) missingDeviceNodes() string {
	nodes := []string{"/dev/nvidiactl"}
	for _, g := range s.gpus {
		if g.minor >= 0 {
			nodes = append(nodes, fmt.Sprintf("/dev/nvidia%d", g.minor))
		}
	}
	var missing []string
	for _, n := range nodes {
		if _, err := s.env.FS.Stat(n); err != nil {
			missing = append(missing, s.env.FS.Display(n))
		}
	}
	if len(missing) == 0 {
		return ""
	}
	return strings.Join(missing, ", ") + " missing"
}

// containerImage picks the image to run: the one asked for, else the first
// the provisioner seeded; it must be in containerd's k8s.io namespace.
func (s *session) containerImage(ctx context.Context, ctr string) (ref, why string) {
	ref = s.v.image
	if ref == "" {
		refs, err := runtime.SeededImageRefs(s.env.FS)
		if err != nil {
			return "", "no image to run: " + err.Error()
		}
		if len(refs) == 0 {
			return "", "no image to run: none was named, and no image was seeded into " + s.env.FS.Display(runtime.SeededImagesDir)
		}
		ref = refs[0]
	}
	out, err := s.run.Run(ctx, nil, ctr, "-n", containerdNamespace, "images", "ls", "-q")
	if err != nil {
		return "", fmt.Sprintf("containerd does not list its images (ctr -n %s images ls: %s): %s", containerdNamespace, exitText(err), tail(out, 3))
	}
	if !hasLine(out, ref) {
		return "", fmt.Sprintf("image %s is not in containerd's %s namespace; import it, or name one that is", ref, containerdNamespace)
	}
	return ref, ""
}

// runContainer runs nvidia-smi -L in a container given every GPU through
// CDI, and compares the GPUs it lists with NVML's.
func (s *session) runContainer(ctx context.Context, step facts.ValidationStep, ctr, image string) facts.ValidationStep {
	name := fmt.Sprintf("gpuhost-validate-%d-%d", os.Getpid(), time.Now().UnixNano())
	out, err := s.run.Run(ctx, nil, ctr, "-n", containerdNamespace, "run", "--rm", "--device", cdiAll, image, name, "nvidia-smi", "-L")
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		s.removeContainer(ctx, ctr, name)
		return failed(step, fmt.Sprintf("the container %s did not finish within the step's time: %s", name, tail(out, 3)))
	}
	if err != nil {
		return failed(step, fmt.Sprintf("ctr run --device %s %s nvidia-smi -L: %s: %s", cdiAll, image, exitText(err), tail(out, 3)))
	}
	seen := ParseNvidiaSMIList(out)
	listed := map[string]bool{}
	for _, g := range s.gpus {
		listed[g.uuid] = true
		if seen[g.uuid] {
			step.GPUs = append(step.GPUs, g.result(facts.ValidationPassed, "listed by nvidia-smi in the container"))
		} else {
			step.GPUs = append(step.GPUs, g.result(facts.ValidationFailed, "not listed by nvidia-smi in the container"))
		}
	}
	step = judge(step, "nvidia-smi -L in a container given "+cdiAll)
	var extra []string
	for u := range seen {
		if !listed[u] {
			extra = append(extra, u)
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		step.Status = facts.ValidationFailed
		step.Reason += "; the container also lists GPUs NVML does not: " + strings.Join(extra, ", ")
	}
	return step
}

// removeContainer cleans up after a container that outlived the step:
// ctr's --rm only removes it when ctr sees the task end.
func (s *session) removeContainer(ctx context.Context, ctr, name string) {
	cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	_, _ = s.run.Run(cleanup, nil, ctr, "-n", containerdNamespace, "tasks", "kill", "--signal", "SIGKILL", name)
	_, _ = s.run.Run(cleanup, nil, ctr, "-n", containerdNamespace, "containers", "delete", name)
}

// smiGPULine is a GPU line of nvidia-smi -L:
//
//	GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-6e8a3c56-...)
var smiGPULine = regexp.MustCompile(`^GPU \d+: .*\(UUID: (GPU-[0-9A-Za-z-]+)\)\s*$`)

// ParseNvidiaSMIList returns the UUIDs of the GPUs nvidia-smi -L lists; its
// MIG device lines are not GPUs and are left out.
func ParseNvidiaSMIList(out []byte) map[string]bool {
	seen := map[string]bool{}
	for line := range strings.Lines(string(out)) {
		if m := smiGPULine.FindStringSubmatch(strings.TrimRight(line, "\r\n")); m != nil {
			seen[m[1]] = true
		}
	}
	return seen
}
