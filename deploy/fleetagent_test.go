package deploy

import (
	"bytes"
	"context"
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

	"github.com/gpuhost/gpuhost/agent"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/internal/testutil/gpumock"
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
// scanning every interval. Its GPUs are gpumock's DGX A100; each scan
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
		GPU:         agent.NewGPUSampler(gpumock.DGXA100(), dir, log),
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
