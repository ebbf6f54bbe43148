package gpu_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/facts/gpu"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

// seededImage is the image the stand-in containerd holds, as the first-boot
// import names it.
const seededImage = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"

// standInCtr plays containerd's ctr on the host: it answers the two
// commands the container step sends, refuses any other, and lists in the
// container the GPUs /etc/stand-in/nvidia-smi-L holds, as nvidia-smi -L
// would with the devices CDI gave it.
const standInCtr = `#!/bin/sh
[ "$1" = -n ] && [ "$2" = k8s.io ] || { echo "ctr: want -n k8s.io, got: $*" >&2; exit 2; }
shift 2
case "$*" in
"images ls -q")
	echo ` + seededImage + `
	;;
"run --rm --device nvidia.com/gpu=all ` + seededImage + ` gpuhost-validate-"*" nvidia-smi -L")
	while read -r line; do echo "$line"; done </etc/stand-in/nvidia-smi-L
	;;
*)
	echo "ctr: unexpected command: $*" >&2
	exit 2
	;;
esac
`

// standInVectorAdd plays the CUDA sample: it passes on the GPU it is shown,
// unless that is the GPU in /etc/stand-in/broken-gpu (or hangs on it, when
// the file says hang:GPU), and insists on being
// shown exactly one GPU by UUID in PCI bus order.
const standInVectorAdd = `#!/bin/sh
[ "$CUDA_DEVICE_ORDER" = PCI_BUS_ID ] || { echo "CUDA_DEVICE_ORDER is not PCI_BUS_ID"; exit 3; }
read -r broken </etc/stand-in/broken-gpu
case "$broken" in
"hang:$CUDA_VISIBLE_DEVICES")
	echo "[Vector addition of 50000 elements]"
	while :; do :; done
	;;
"$CUDA_VISIBLE_DEVICES")
	echo "[Vector addition of 50000 elements]"
	echo "Failed to launch vectorAdd kernel (error code an illegal memory access was encountered)!"
	exit 1
	;;
esac
case "$CUDA_VISIBLE_DEVICES" in
GPU-*)
	echo "[Vector addition of 50000 elements]"
	echo "Test PASSED"
	echo "Done"
	;;
*)
	echo "no single GPU named: $CUDA_VISIBLE_DEVICES"
	exit 1
	;;
esac
`

// hostRoot is hgxNode's tree made runnable as a chroot: a shell with its
// libraries, the stand-ins for ctr and vectorAdd, containerd's socket, the
// GPU device nodes and a seeded layout. listed are the GPUs the container
// sees; broken is the GPU vectorAdd fails on.
func hostRoot(t *testing.T, listed []int, broken string) string {
	t.Helper()
	testutil.Root(t)
	ldd := testutil.Tool(t, "ldd", "libc-bin")
	n := hgxNode()
	var smi strings.Builder
	for _, i := range listed {
		fmt.Fprintf(&smi, "GPU %d: NVIDIA H100 80GB HBM3 (UUID: %s)\n", i, gpuUUID(i))
	}
	n.extra = map[string]any{
		"usr/bin/ctr":                        standInCtr,
		"usr/lib/gpuhost/validate/vectorAdd": standInVectorAdd,
		"etc/stand-in/nvidia-smi-L":          smi.String(),
		"etc/stand-in/broken-gpu":            broken + "\n",
		"dev/nvidiactl":                      "",
		"var/lib/gpuhost/images/index.json":  `{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"sha256:` + strings.Repeat("ab", 32) + `","size":1,"annotations":{"io.containerd.image.name":"` + seededImage + `"}}]}`,
		"run/containerd/":                    "",
	}
	for i := range 8 {
		n.extra[fmt.Sprintf("dev/nvidia%d", i)] = ""
	}
	dir := n.tree(t)
	for _, p := range []string{"usr/bin/ctr", "usr/lib/gpuhost/validate/vectorAdd"} {
		if err := os.Chmod(filepath.Join(dir, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := syscall.Mknod(filepath.Join(dir, "run/containerd/containerd.sock"), syscall.S_IFSOCK|0o600, 0); err != nil {
		t.Fatal(err)
	}
	copyShell(t, ldd, dir)
	return dir
}

// copyShell puts this machine's /bin/sh, and the libraries ldd says it
// loads, at the same paths under root.
func copyShell(t *testing.T, ldd, root string) {
	t.Helper()
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(ldd, sh).Output()
	if err != nil {
		t.Fatalf("ldd %s: %v", sh, err)
	}
	files := map[string]string{"/bin/sh": sh}
	for _, f := range strings.Fields(string(out)) {
		if strings.HasPrefix(f, "/") {
			files[f] = f
		}
	}
	for dst, src := range files {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(root, dst)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// TestValidateContainerAndCUDAOnAHostRoot runs the container and CUDA steps
// for real through the host runner, chrooted into a host root whose ctr and
// vectorAdd are shell stand-ins: the step's command lines, the image it
// picks from the seeded layout, the environment each GPU's run is given,
// and how the step judges what they print.
func TestValidateContainerAndCUDAOnAHostRoot(t *testing.T) {
	all := []int{0, 1, 2, 3, 4, 5, 6, 7}
	t.Run("every GPU passes", func(t *testing.T) {
		v := validate(t, hgxH100(), hostRoot(t, all, "none"), "active")
		expectStep(t, v, gpu.StepContainer, facts.ValidationPassed, "nvidia-smi -L in a container given nvidia.com/gpu=all passed on every GPU (8)")
		expectStep(t, v, gpu.StepCUDA, facts.ValidationPassed, "vectorAdd passed on every GPU (8)")
		if got := gpu.Verdict(v); got != gpu.VerdictPassed {
			t.Errorf("verdict %s: %+v", got, v.Steps)
		}
	})
	t.Run("the container misses a GPU", func(t *testing.T) {
		v := validate(t, hgxH100(), hostRoot(t, all[:7], "none"), "active")
		expectStep(t, v, gpu.StepContainer, facts.ValidationFailed, "failed on 1 of 8 GPUs: GPU 7 ("+gpuUUID(7)+"): not listed by nvidia-smi in the container")
	})
	t.Run("vectorAdd fails on a GPU", func(t *testing.T) {
		v := validate(t, hgxH100(), hostRoot(t, all, gpuUUID(3)), "active")
		expectStep(t, v, gpu.StepCUDA, facts.ValidationFailed, "vectorAdd failed on 1 of 8 GPUs: GPU 3 ("+gpuUUID(3)+"): vectorAdd exit status 1:", "illegal memory access")
	})
	t.Run("vectorAdd hangs on a GPU", func(t *testing.T) {
		v := validate(t, hgxH100(), hostRoot(t, all, "hang:"+gpuUUID(1)), "active", gpu.WithStepTimeout(time.Second), gpu.WithSkip(gpu.StepContainer))
		st := expectStep(t, v, gpu.StepCUDA, facts.ValidationFailed, "GPU 1 ("+gpuUUID(1)+"): vectorAdd did not finish within the step's time")
		if g := st.GPUs[2]; g.Status != facts.ValidationNotRun || !strings.Contains(g.Detail, "time ran out") {
			t.Errorf("GPU 2 after the hang: %+v", g)
		}
	})
	t.Run("a GPU in MIG mode", func(t *testing.T) {
		s := hgxH100()
		device(s, 0).GetMigModeFunc = func() (int, int, nvml.Return) { return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS }
		v := validate(t, s, hostRoot(t, all, "none"), "active", gpu.WithSkip(gpu.StepContainer))
		expectStep(t, v, gpu.StepCUDA, facts.ValidationNotRun, "GPU 0 ("+gpuUUID(0)+"): MIG is enabled")
	})
	t.Run("image not in containerd", func(t *testing.T) {
		v := validate(t, hgxH100(), hostRoot(t, all, "none"), "active", gpu.WithImage("nvcr.io/nvidia/pytorch:24.08-py3"))
		expectStep(t, v, gpu.StepContainer, facts.ValidationNotRun, "image nvcr.io/nvidia/pytorch:24.08-py3 is not in containerd's k8s.io namespace")
	})
	t.Run("no device nodes", func(t *testing.T) {
		dir := hostRoot(t, all, "none")
		if err := os.Remove(filepath.Join(dir, "dev/nvidiactl")); err != nil {
			t.Fatal(err)
		}
		v := validate(t, hgxH100(), dir, "active")
		expectStep(t, v, gpu.StepContainer, facts.ValidationNotRun, "no GPU device nodes to give a container: /dev/nvidiactl missing")
		expectStep(t, v, gpu.StepCUDA, facts.ValidationNotRun, "no GPU device nodes for CUDA to open: /dev/nvidiactl missing")
	})
}

// TestHostRunnerChroots: a program run for a host root sees that root as /,
// with only the environment it was given beside PATH and LC_ALL.
func TestHostRunnerChroots(t *testing.T) {
	testutil.Root(t)
	dir := t.TempDir()
	collecttest.WriteTree(t, dir, map[string]any{
		"etc/marker":   "inside the host root\n",
		"usr/bin/show": "#!/bin/sh\nread -r m </etc/marker\necho \"$m; $GREETING; $HOME\"\n",
	})
	if err := os.Chmod(filepath.Join(dir, "usr/bin/show"), 0o755); err != nil {
		t.Fatal(err)
	}
	copyShell(t, testutil.Tool(t, "ldd", "libc-bin"), dir)
	out, err := gpu.NewHostRunner(dir).Run(t.Context(), []string{"GREETING=hello"}, "/usr/bin/show")
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != "inside the host root; hello;" {
		t.Errorf("output %q", got)
	}
}
