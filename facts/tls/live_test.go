package tls_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/target"
	"github.com/gpuhost/gpuhost/target/collector"
)

// TestLiveNginxMaster starts nginx with -c naming a file in a temporary
// directory and checks that the tls facts come from that file (its relative
// include resolved against its own directory), tied to the master's pid.
func TestLiveNginxMaster(t *testing.T) {
	testutil.Root(t)
	nginx := testutil.Tool(t, "nginx", "nginx")
	dir := t.TempDir()
	port := testutil.FreePort(t)
	conf := filepath.Join(dir, "nginx.conf")
	body := fmt.Sprintf("error_log stderr;\nevents {}\nhttp {\n\taccess_log off;\n%s\tinclude sites/*.conf;\n}\n", testutil.NginxTempPaths(dir))
	site := fmt.Sprintf("server {\n\tlisten 127.0.0.1:%d;\n\tssl_protocols TLSv1 TLSv1.2;\n}\n", port)
	if err := os.MkdirAll(filepath.Join(dir, "sites"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{conf: body, filepath.Join(dir, "sites", "a.conf"): site} {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pid := filepath.Join(dir, "nginx.pid")
	p := testutil.Start(t, exec.Command(nginx, "-c", conf, "-e", "stderr", "-g", "daemon off; pid "+pid+";"))
	p.WaitFor(t, 20*time.Second, "the pid file", func() bool { _, err := os.Stat(pid); return err == nil })

	f := collectLive(t)
	var mine []facts.NginxTLS
	for _, n := range f.TLS.Nginx {
		if n.PID == p.Cmd.Process.Pid {
			mine = append(mine, n)
		}
	}
	want := facts.NginxTLS{File: filepath.Join(dir, "sites", "a.conf"), Line: 3, Protocols: []string{"TLSv1", "TLSv1.2"}, Source: "process", PID: p.Cmd.Process.Pid}
	if len(mine) != 1 || mine[0].File != want.File || mine[0].Line != want.Line || !slices.Equal(mine[0].Protocols, want.Protocols) || mine[0].Source != want.Source {
		t.Errorf("nginx facts of pid %d = %+v, want %+v (all: %+v)", p.Cmd.Process.Pid, mine, want, f.TLS.Nginx)
	}
}

// collectLive runs the tls collector, and the packages collector it needs,
// over "/" as a live host, as `gpuhost facts host` does.
func collectLive(t *testing.T) *facts.Facts {
	t.Helper()
	var cs []collector.Collector
	for _, c := range target.All() {
		if slices.Contains([]string{"packages", "tls"}, c.Name()) {
			cs = append(cs, c)
		}
	}
	f, err := target.Host(context.Background(), "/", target.Options{Collectors: cs})
	if err != nil {
		t.Fatal(err)
	}
	if st := f.Collectors["tls"]; st.Status != facts.StatusOK {
		t.Fatalf("collector tls: %s (%s)", st.Status, st.Reason)
	}
	return f
}
