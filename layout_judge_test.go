package layout_test

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// judging are the packages that judge a facts document and say the
// verdict: they must not link a collector, so that a policy engine, a
// renderer or a program that only reads saved facts carries neither NVML's
// cgo nor a TLS prober.
var judging = []string{"./engine/...", "./scan/...", "./facts", "./policies/...", "./render/...", "./reports/..."}

// TestJudgingBuildsWithoutCgo fails when a package that judges facts links
// a collector: go-nvml, the one cgo dependency, needs cgo, so a build
// without it is the plainest proof that none is linked.
func TestJudgingBuildsWithoutCgo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the judging packages without cgo; make test runs it")
	}
	cmd := exec.Command("go", append([]string{"build", "-o", os.DevNull}, judging...)...)
	cmd.Env = append(os.Environ(), "GOEXPERIMENT=jsonv2", "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("CGO_ENABLED=0 go build %s: %v\n%s", strings.Join(judging, " "), err, out)
	}
}

// engineBudget is the most packages of ours the policy engine may reach,
// itself included: the document (facts and what it is made of: collect,
// sysroot, userfile), reports and boundedyaml. The engine judges a document;
// a package more is a dependency to justify here.
const engineBudget = 7

// TestEngineReachesLittle fails when the engine reaches more of our
// packages than engineBudget, naming them.
func TestEngineReachesLittle(t *testing.T) {
	cmd := exec.Command("go", "list", "-deps", "./engine")
	cmd.Env = append(os.Environ(), "GOEXPERIMENT=jsonv2")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps ./engine: %v\n%s", err, stderr.Bytes())
	}
	var ours []string
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, module) {
			ours = append(ours, strings.TrimPrefix(p, module))
		}
	}
	if len(ours) > engineBudget {
		t.Errorf("engine reaches %d of our packages, more than %d:\n  %s", len(ours), engineBudget, strings.Join(ours, "\n  "))
	}
}
