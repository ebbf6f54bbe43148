package deploy

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/server"

	"github.com/gpuhost/gpuhost/agent"
	"github.com/gpuhost/gpuhost/checks/sysroot"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/manifest"
	"github.com/gpuhost/gpuhost/reports"
)

// serverName is the name the ServiceMonitor asks the agent for by SNI,
// which its certificate must carry.
const serverName = "gpuhost-agent.gpuhost.svc"

// fleetAgent is the agent as its pod runs it: TLS 1.3 with a certificate
// for serverName, a bearer token, a scan of a node's root with drift
// against the manifest baked into it, and GPUs sampled through NVML.
type fleetAgent struct {
	// Root is the node's root filesystem the agent scans.
	Root string
	// CA, Cert, Key and Token are what the gpuhost-agent-tls and
	// gpuhost-agent-token secrets hold.
	CA, Cert, Key, Token []byte
	// Scans has how long each scan took, while it has room.
	Scans chan time.Duration
}

// startFleetAgent runs the agent on 127.0.0.1:port until the test ends,
// scanning every interval. Its GPUs are go-nvml's mock DGX A100; each scan
// is the lean binary's drift command on the node's root, the pipeline the
// agent command runs with --baseline.
func startFleetAgent(t *testing.T, port int, interval time.Duration) *fleetAgent {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "gpuhost-agent")
	testutil.Run(t, 10*time.Minute, "go", "build", "-trimpath", "-tags", "lean", "-o", bin, "../cmd/gpuhost")
	root := filepath.Join(dir, "rootfs")
	if err := os.CopyFS(root, os.DirFS("../cmd/gpuhost/testdata/rootfs-hardened")); err != nil {
		t.Fatal(err)
	}
	baseline := filepath.Join(dir, "manifest.json")
	bake(t, root, baseline)

	ca := testutil.NewCA(t)
	certFile, keyFile, _ := testutil.WriteCert(t, dir, testutil.CertSpec{CA: ca, CommonName: serverName, DNS: []string{serverName}, IPs: []net.IP{net.IPv4(127, 0, 0, 1)}})
	tokenFile := filepath.Join(dir, "token")
	writeFile(t, tokenFile, "gpuhost-scrape-token-0123456789")
	fa := &fleetAgent{Root: root, CA: ca.PEM(), Token: readFile(t, tokenFile), Cert: readFile(t, certFile), Key: readFile(t, keyFile), Scans: make(chan time.Duration, 100)}

	log := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))
	a, err := agent.New(agent.Config{
		Scan:        fa.driftScan(bin, baseline),
		Interval:    interval,
		RunAtStart:  true,
		DBPath:      filepath.Join(dir, "history.db"),
		Listen:      fmt.Sprintf("127.0.0.1:%d", port),
		TLSCert:     certFile,
		TLSKey:      keyFile,
		TokenFile:   tokenFile,
		GPU:         agent.NewGPUSampler(mockGPUs(), dir, log),
		GPUInterval: time.Second,
		Log:         log,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("agent: %v", err)
		}
		a.Close()
	})
	return fa
}

// driftScan runs `gpuhost-agent drift --baseline --rootfs --format json`
// and hands the agent its report; exit 1 (a check failed) is a report
// like exit 0.
func (fa *fleetAgent) driftScan(bin, baseline string) agent.ScanFunc {
	return func(ctx context.Context) (*reports.Report, error) {
		start := time.Now()
		var stdout, stderr bytes.Buffer
		cmd := exec.CommandContext(ctx, bin, "drift", "--baseline", baseline, "--rootfs", fa.Root, "--format", "json")
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		if err != nil && (!errors.As(err, &exit) || exit.ExitCode() != 1) {
			return nil, fmt.Errorf("drift: %w: %s", err, stderr.Bytes())
		}
		var rep reports.Report
		if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
			return nil, fmt.Errorf("drift's report: %w", err)
		}
		select {
		case fa.Scans <- time.Since(start):
		default:
		}
		return &rep, nil
	}
}

// bake writes the manifest of root into baseline, as the image build bakes
// it into /etc/gpuhost/manifest.json.
func bake(t *testing.T, root, baseline string) {
	t.Helper()
	fsys, closer, err := sysroot.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	defer closer.Close()
	m, err := manifest.Build(context.Background(), fsys, manifest.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Write(baseline); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// mockGPUs is go-nvml's DGX A100 (eight A100s) answering every reading the
// agent samples, steady at 40 C, 100 W and 30% utilization.
func mockGPUs() nvml.Interface {
	g := dgxa100.New()
	g.ErrorStringFunc = func(r nvml.Return) string { return r.Error() }
	g.EventSetCreateFunc = func() (nvml.EventSet, nvml.Return) {
		return &mock.EventSet{
			WaitFunc: func(uint32) (nvml.EventData, nvml.Return) { return nvml.EventData{}, nvml.ERROR_TIMEOUT },
			FreeFunc: func() nvml.Return { return nvml.SUCCESS },
		}, nvml.SUCCESS
	}
	for _, d := range g.Devices {
		dev := d.(*server.Device)
		dev.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{Gpu: 30, Memory: 10}, nvml.SUCCESS }
		dev.GetEncoderUtilizationFunc = func() (uint32, uint32, nvml.Return) { return 0, 167000, nvml.SUCCESS }
		dev.GetDecoderUtilizationFunc = func() (uint32, uint32, nvml.Return) { return 0, 167000, nvml.SUCCESS }
		dev.GetMemoryInfo_v2Func = func() (nvml.Memory_v2, nvml.Return) {
			return nvml.Memory_v2{Total: 40 << 30, Reserved: 512 << 20, Used: 1 << 30, Free: 40<<30 - 512<<20 - 1<<30}, nvml.SUCCESS
		}
		dev.GetPowerUsageFunc = func() (uint32, nvml.Return) { return 100000, nvml.SUCCESS }
		dev.GetTotalEnergyConsumptionFunc = func() (uint64, nvml.Return) { return 9e8, nvml.SUCCESS }
		dev.GetPcieReplayCounterFunc = func() (int, nvml.Return) { return 0, nvml.SUCCESS }
		dev.GetFieldValuesFunc = func(fv []nvml.FieldValue) nvml.Return {
			for k := range fv {
				fv[k].NvmlReturn = uint32(nvml.SUCCESS)
				fv[k].ValueType = uint32(nvml.VALUE_TYPE_UNSIGNED_LONG_LONG)
				binary.NativeEndian.PutUint64(fv[k].Value[:], 0)
			}
			return nvml.SUCCESS
		}
		dev.GetTemperatureFunc = func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 40, nvml.SUCCESS }
		dev.GetTemperatureThresholdFunc = func(nvml.TemperatureThresholds) (uint32, nvml.Return) { return 88, nvml.SUCCESS }
		dev.GetClockInfoFunc = func(nvml.ClockType) (uint32, nvml.Return) { return 1410, nvml.SUCCESS }
		dev.GetCurrentClocksThrottleReasonsFunc = func() (uint64, nvml.Return) { return 0, nvml.SUCCESS }
		dev.GetTotalEccErrorsFunc = func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) { return 0, nvml.SUCCESS }
		dev.GetRemappedRowsFunc = func() (int, int, bool, bool, nvml.Return) { return 0, 0, false, false, nvml.SUCCESS }
		dev.GetComputeRunningProcessesFunc = func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.SUCCESS }
		dev.RegisterEventsFunc = func(uint64, nvml.EventSet) nvml.Return { return nvml.SUCCESS }
	}
	return g
}
