package gate

import (
	"context"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"golang.org/x/crypto/bcrypt"

	"github.com/gpuhost/gpuhost/containers/publish"
	"github.com/gpuhost/gpuhost/internal/testutil/testsign"
)

// TestE2ERealRegistry publishes through the gate to a real registry
// process: Debian's docker-registry (distribution 2.8), which has no OCI
// referrers API, so the referrers travel by the tag schema. The registry
// asks for basic auth, taken from the environment variables the template
// names.
func TestE2ERealRegistry(t *testing.T) {
	if os.Getenv("GPUHOST_E2E") != "1" {
		t.Skip("end-to-end publish to a real registry: set GPUHOST_E2E=1 (needs the docker-registry package)")
	}
	bin, err := exec.LookPath("docker-registry")
	if err != nil {
		t.Fatal("docker-registry is missing: apt-get install docker-registry")
	}
	dir := t.TempDir()
	hash, err := bcrypt.GenerateFromPassword([]byte("e2e-secret"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "htpasswd"), []byte("gate:"+string(hash)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	config := fmt.Sprintf(`version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: %s
http:
  addr: %s
auth:
  htpasswd:
    realm: gpuhost-e2e
    path: %s
`, filepath.Join(dir, "data"), addr, filepath.Join(dir, "htpasswd"))
	cfgFile := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgFile, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "registry.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(bin, "serve", cfgFile)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			b, _ := os.ReadFile(logFile.Name())
			t.Logf("registry log:\n%s", b)
		}
	})
	waitForRegistry(t, addr)

	t.Setenv("E2E_REGISTRY_USER", "gate")
	t.Setenv("E2E_REGISTRY_PASSWORD", "e2e-secret")
	repo := addr + "/gpuhost/debian-12-gpu"
	// A fixable critical CVE the waivers accept: the image passes and
	// goes out with an OpenVEX referrer beside its other evidence.
	db, waiverFile := cveFixture(t)
	p, pub := configureSigned(t, map[string]interface{}{
		"params": params, "trivy_db": db, "waivers": waiverFile,
		"publish": map[string]interface{}{
			"repository": repo, "tag": "e2e",
			"username_env": "E2E_REGISTRY_USER", "password_env": "E2E_REGISTRY_PASSWORD",
		},
	})
	u := newUI()
	out, _, _, err := p.PostProcess(context.Background(), u, diskArtifact(t, hardened, true))
	if err != nil {
		t.Fatalf("%v\n%s", err, u.out)
	}
	t.Logf("gate output:\n%s", u.out)
	res := out.State("published").(*publish.Result)

	refs, err := publish.Referrers(context.Background(), repo+":e2e", publish.WithBasicAuth("gate", "e2e-secret"))
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, r := range refs {
		types = append(types, r.ArtifactType)
	}
	slices.Sort(types)
	if want := []string{publish.ArtifactTypeSBOM, publish.ArtifactTypeManifest, publish.ArtifactTypeReport, publish.ArtifactTypeVEX}; !slices.Equal(types, want) {
		t.Errorf("referrers %v, want %v", types, want)
	}
	// distribution 2.8 has no referrers API: the referrers index lives
	// under the tag schema's sha256-<hex> tag.
	r, err := name.NewRepository(repo)
	if err != nil {
		t.Fatal(err)
	}
	tags, err := remote.List(r, remote.WithAuth(&authn.Basic{Username: "gate", Password: "e2e-secret"}))
	if err != nil {
		t.Fatal(err)
	}
	if fallback := strings.Replace(res.Image.Digest, ":", "-", 1); !slices.Contains(tags, fallback) {
		t.Errorf("tags %v lack the referrers fallback tag %s", tags, fallback)
	}
	// The real cosign verifies the signature and the SLSA provenance in
	// the real registry, reading its credentials from a docker config as
	// a user's would; gpuhost verify does through the CLI.
	ref := repo + "@" + res.Image.Digest
	dockerConfig := t.TempDir()
	auth := base64.StdEncoding.EncodeToString([]byte("gate:e2e-secret"))
	if err := os.WriteFile(filepath.Join(dockerConfig, "config.json"), []byte(`{"auths":{"`+addr+`":{"auth":"`+auth+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	testsign.CosignVerifies(t, ref, pub, []string{"DOCKER_CONFIG=" + dockerConfig})
	if bin := os.Getenv("GPUHOST_BIN"); bin != "" {
		cmd := exec.Command(bin, "verify", ref, "--key", pub, "--max-age", "1d",
			"--username-env", "E2E_REGISTRY_USER", "--password-env", "E2E_REGISTRY_PASSWORD")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "vex:") {
			t.Errorf("gpuhost verify %s: %v (want the vex referrer checked)\n%s", ref, err, out)
		}
		t.Logf("gpuhost verify:\n%s", out)
	}
	// Without credentials the registry refuses, so the gate really
	// authenticated.
	if _, err := publish.Referrers(context.Background(), repo+":e2e"); err == nil {
		t.Error("the registry answered without credentials")
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// waitForRegistry polls /v2/ until the registry answers (401 or 200).
func waitForRegistry(t *testing.T, addr string) {
	t.Helper()
	for range 100 {
		resp, err := http.Get("http://" + addr + "/v2/")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusUnauthorized {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("docker-registry did not answer on %s", addr)
}
