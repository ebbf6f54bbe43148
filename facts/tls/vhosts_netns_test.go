package tls

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

// vhostsChildEnv names the file the probe inside TestNginxVirtualHosts's
// namespace writes its facts to, with the nginx.conf it reads after a
// newline; set only for that run.
const vhostsChildEnv = "GPUHOST_TLS_VHOSTS"

// The namespace's own addresses besides loopback: nginx serves a server
// of its own at the first, and the wildcard's servers at the second.
const (
	innerAddr = "10.9.0.2"
	outerAddr = "10.9.0.3"
)

// TestNginxVirtualHosts: the certificate a client gets depends on the name
// it sends and the address it connects to, and the probe asked only
// through 127.0.0.1 without a name, so an expired virtual host and a name
// its certificate does not cover passed. nginx, in a network namespace of
// the test's own with two addresses besides loopback, listens on one
// wildcard socket with a sound default server, a server whose certificate
// has expired, one whose certificate is for another name, and a server
// bound to one address with a self-signed certificate. The probe, run inside the
// namespace with the names nginx's configuration gives, must get the
// certificate openssl s_client gets for each name and address, and
// GH-TLS-005 and GH-TLS-009 must name each fault by how it was asked.
func TestNginxVirtualHosts(t *testing.T) {
	prefix := testutil.Netns(t)
	nginx := testutil.Tool(t, "nginx", "nginx")
	for _, a := range []string{innerAddr, outerAddr} {
		testutil.Run(t, 30*time.Second, prefix[0], append(prefix[1:], "ip", "addr", "add", a+"/32", "dev", "lo")...)
	}
	dir := t.TempDir()
	port := testutil.FreePort(t)
	ca := testutil.NewCA(t)
	certs := map[string]testutil.CertSpec{
		"default":  {CA: ca, Key: "p256", DNS: []string{"default.test", "localhost"}, CommonName: "default"},
		"api":      {CA: ca, Key: "p256", DNS: []string{"api.test"}, CommonName: "api", NotAfter: time.Now().Add(-48 * time.Hour)},
		"mismatch": {CA: ca, Key: "p256", DNS: []string{"other.test"}, CommonName: "mismatch"},
		"inner":    {Key: "p256", DNS: []string{"inner.test"}, CommonName: "inner"},
	}
	var servers strings.Builder
	for _, name := range []string{"default", "api", "mismatch", "inner"} {
		sub := filepath.Join(dir, name)
		if err := os.Mkdir(sub, 0o700); err != nil {
			t.Fatal(err)
		}
		certPath, keyPath, _ := testutil.WriteCert(t, sub, certs[name])
		listen, serverName := fmt.Sprintf("%d ssl", port), name+".test"
		switch name {
		case "default":
			listen += " default_server"
		case "inner":
			listen = fmt.Sprintf("%s:%d ssl", innerAddr, port)
		}
		fmt.Fprintf(&servers, "\tserver {\n\t\tlisten %s;\n\t\tserver_name %s;\n\t\tssl_certificate %s;\n\t\tssl_certificate_key %s;\n\t}\n",
			listen, serverName, certPath, keyPath)
	}
	conf := filepath.Join(dir, "nginx.conf")
	pid := filepath.Join(dir, "nginx.pid")
	body := fmt.Sprintf("master_process off;\nerror_log stderr;\npid %s;\nevents {}\nhttp {\n\taccess_log off;\n%s%s}\n",
		pid, testutil.NginxTempPaths(dir), servers.String())
	if err := os.WriteFile(conf, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	p := testutil.Start(t, exec.Command(prefix[0], append(prefix[1:], nginx, "-c", conf, "-e", "stderr", "-g", "daemon off;")...))
	p.WaitFor(t, 20*time.Second, "nginx's pid file", func() bool { _, err := os.Stat(pid); return err == nil || p.Exited() })
	if p.Exited() {
		t.Fatalf("nginx exited:\n%s", p.Output())
	}

	out := filepath.Join(dir, "facts.json")
	data := factsFromNetns(t, prefix, "TestProbeVirtualHostsInsideNetns", vhostsChildEnv+"="+out+"\n"+conf+"\n"+strconv.Itoa(port), out)
	var doc facts.Facts
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	probe := doc.TLS.Probes[0]

	// What s_client gets, asked each way inside the namespace.
	leafOf := func(addr, name string) string {
		args := append(slices.Clone(prefix[1:]), "openssl", "s_client", "-connect", addr+":"+strconv.Itoa(port), "-showcerts")
		if name == "" {
			args = append(args, "-noservername")
		} else {
			args = append(args, "-servername", name)
		}
		got, _ := runPeer(20*time.Second, prefix[0], args...)
		block, sha := shownLeaf(got)
		if block == nil {
			t.Fatalf("s_client %s %q showed no certificate:\n%s", addr, name, got)
		}
		return sha
	}
	ours := func(v facts.TLSView) string {
		if v.SameAsDefault {
			return probe.Chain[0].SHA256
		}
		if len(v.Chain) == 0 {
			t.Fatalf("view %+v has no chain", v)
		}
		return v.Chain[0].SHA256
	}
	if got, want := probe.Chain[0].SHA256, leafOf("127.0.0.1", ""); got != want {
		t.Errorf("the unnamed leaf is %s, s_client got %s", got[:12], want[:12])
	}
	asked := map[string]bool{}
	for _, v := range probe.Views {
		if v.Error != "" {
			t.Errorf("view %+v: an error", v)
			continue
		}
		host, _, _ := strings.Cut(v.Address, ":")
		asked[host+" "+v.ServerName] = true
		if got, want := ours(v), leafOf(host, v.ServerName); got != want {
			t.Errorf("view %s %q: the probe got leaf %s, s_client %s", v.Address, v.ServerName, got[:12], want[:12])
		}
	}
	for _, want := range []string{"127.0.0.1 default.test", "127.0.0.1 api.test", "127.0.0.1 mismatch.test", innerAddr + " inner.test",
		innerAddr + " ", outerAddr + " ", "127.0.0.1 localhost"} {
		if !asked[want] {
			t.Errorf("no view asked %q; views %+v", want, probe.Views)
		}
	}

	wild := fmt.Sprintf("0.0.0.0:%d", port)
	deny, errs := verdict(t, probe, "probe_server_names", nil)
	line := 1 + strings.Count(body[:strings.Index(body, "server_name mismatch.test")], "\n")
	wantNames := []string{fmt.Sprintf("%s for server name mismatch.test sends a certificate (CN=mismatch) whose names do not cover mismatch.test, a name nginx serves TLS under at %s:%d", wild, conf, line)}
	if !slices.Equal(deny, wantNames) || errs != nil {
		t.Errorf("GH-TLS-009: deny %q, errors %q; want %q", deny, errs, wantNames)
	}
	deny, _ = verdict(t, probe, "probe_certificate", map[string]any{"tls_cert_min_days": 0})
	for _, want := range []string{
		wild + " for server name api.test: certificate 0 (CN=api): expired on ",
		wild + " at " + innerAddr + ":" + strconv.Itoa(port) + ": certificate 0 (CN=inner): self-signed on a non-loopback address",
	} {
		if !slices.ContainsFunc(deny, func(m string) bool { return strings.HasPrefix(m, want) }) {
			t.Errorf("GH-TLS-005: deny %q, want one that starts %q", deny, want)
		}
	}
}

// TestProbeVirtualHostsInsideNetns is the probe's side of
// TestNginxVirtualHosts, run by it inside its namespace: the names come
// from the nginx.conf as the tls collector reads it, and the facts of the
// wildcard listener go where the parent reads them.
func TestProbeVirtualHostsInsideNetns(t *testing.T) {
	out, rest, _ := strings.Cut(os.Getenv(vhostsChildEnv), "\n")
	if out == "" {
		t.Skip("runs only inside the network namespace TestNginxVirtualHosts makes")
	}
	conf, portText, _ := strings.Cut(rest, "\n")
	port, err := strconv.Atoi(portText)
	if err != nil {
		t.Fatal(err)
	}
	env := collecttest.NewEnv(t, "/", true)
	cfg, err := LoadNginxAt(env.FS, conf, filepath.Dir(conf))
	if err != nil {
		t.Fatal(err)
	}
	f := listening(facts.Listener{Proto: "tcp", Address: "0.0.0.0", Port: port})
	f.TLS = &facts.TLS{Nginx: []facts.NginxTLS{}, Probes: []facts.TLSProbe{}, ServerNames: serverNameFacts(cfg)}
	if err := collectOne(t, env, f, "tls_probe"); err != nil {
		t.Fatal(err)
	}
	if len(f.TLS.Probes) != 1 {
		t.Fatalf("probes %+v, want the wildcard listener", f.TLS.Probes)
	}
	data, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		t.Fatal(err)
	}
}
