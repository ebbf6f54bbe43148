package gate

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log"
	"maps"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/gpuhost/gpuhost/builder/internal/evaluation"
	"github.com/gpuhost/gpuhost/containers/publish"
	"github.com/gpuhost/gpuhost/containers/trivy"
	"github.com/gpuhost/gpuhost/facts/packages"
	"github.com/gpuhost/gpuhost/internal/testutil/testsign"
	"github.com/gpuhost/gpuhost/policies"
	"github.com/gpuhost/gpuhost/policy/bundle"
	"github.com/gpuhost/gpuhost/reports"
)

const (
	hardened = "../../cmd/gpuhost/testdata/rootfs-hardened"
	weak     = "../../cmd/gpuhost/testdata/rootfs-weak"
	params   = "../../cmd/gpuhost/testdata/params-demo.yaml"
)

// bakedManifest stands in for what the gpuhost-gpu provisioner writes.
const bakedManifest = `{"schema":"gpuhost.manifest/v1","pins":{"packages":[],"ngc_images":[]},"packages":[],"config_files":[],"build":{"template":"gate-test"}}`

// fakeArtifact is what a builder hands the gate.
type fakeArtifact struct {
	files []string
	state map[string]interface{}
}

func (a *fakeArtifact) BuilderId() string                   { return "gpuhost.rootfs" }
func (a *fakeArtifact) Files() []string                     { return a.files }
func (a *fakeArtifact) Id() string                          { return "test" }
func (a *fakeArtifact) String() string                      { return "test artifact" }
func (a *fakeArtifact) State(n string) interface{}          { return a.state[n] }
func (a *fakeArtifact) Destroy() error                      { return nil }
func (a *fakeArtifact) withRootfs(dir string) *fakeArtifact { a.state["rootfs"] = dir; return a }

// plainDiskWaiver waives GH-ENC-001 for the tests' disks: rawImage makes a
// plain ext4 image of a sample tree whose crypttab maps / to a LUKS volume
// the image does not hold, which the gate rightly fails. Encryption is the
// rootfs builder's disk output, and images/ bakes and boots it.
const plainDiskWaiver = `- id: GH-ENC-001
  target: "*"
  justification: the test disk is a plain ext4 image of the sample tree; encrypted disks are tested in images/
  approved_by: gate-tests@example.com
  expires: "2099-01-01"
  ticket: TEST-1
`

// writeWaivers writes a waiver file of the given entries and returns it.
func writeWaivers(t *testing.T, entries ...string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "waivers.yaml")
	if err := os.WriteFile(f, []byte(strings.Join(entries, "")), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// copyRootfs copies a sample rootfs (with its symlinks) into a temp dir,
// adding the baked manifest when asked.
func copyRootfs(t *testing.T, src string, withManifest bool) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "rootfs")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-a", src+"/.", dst).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	if withManifest {
		if err := os.MkdirAll(filepath.Join(dst, "etc/gpuhost"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, "etc/gpuhost/manifest.json"), []byte(bakedManifest), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// rawImage makes an ext4 disk image of rootfs with mkfs.ext4 -d, the way
// the rootfs builder's raw output is made.
func rawImage(t *testing.T, rootfs string) string {
	t.Helper()
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		t.Skip("mkfs.ext4 is missing (e2fsprogs): cannot make a disk image")
	}
	img := filepath.Join(t.TempDir(), "debian-12-gpu.raw")
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", "-d", rootfs, img, "16M").CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v\n%s", err, out)
	}
	return img
}

func diskArtifact(t *testing.T, src string, withManifest bool) *fakeArtifact {
	rootfs := copyRootfs(t, src, withManifest)
	return (&fakeArtifact{files: []string{rawImage(t, rootfs)}, state: map[string]interface{}{}}).withRootfs(rootfs)
}

// diskArtifactWithoutSBOM is diskArtifact for an image baked without the
// SBOM the provisioner writes, so the gate has to make one.
func diskArtifactWithoutSBOM(t *testing.T, src string) *fakeArtifact {
	rootfs := copyRootfs(t, src, true)
	if err := os.Remove(filepath.Join(rootfs, filepath.FromSlash(packages.SBOMPath))); err != nil {
		t.Fatal(err)
	}
	return (&fakeArtifact{files: []string{rawImage(t, rootfs)}, state: map[string]interface{}{}}).withRootfs(rootfs)
}

func newRegistry(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true)))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

func catalog(t *testing.T, host string) []string {
	t.Helper()
	reg, err := name.NewRegistry(host)
	if err != nil {
		t.Fatal(err)
	}
	repos, err := remote.Catalog(context.Background(), reg)
	if err != nil {
		t.Fatal(err)
	}
	return repos
}

type ui struct {
	packersdk.Ui
	out *bytes.Buffer
}

func newUI() ui {
	var b bytes.Buffer
	return ui{&packersdk.BasicUi{Reader: strings.NewReader(""), Writer: &b, ErrorWriter: &b}, &b}
}

func fakeSBOM(_ context.Context, rootfs string) ([]byte, error) {
	if _, err := os.Stat(filepath.Join(rootfs, "etc/os-release")); err != nil {
		return nil, err
	}
	return []byte(`{"bomFormat":"CycloneDX","specVersion":"1.6","components":[]}`), nil
}

func configure(t *testing.T, raw map[string]interface{}) *PostProcessor {
	t.Helper()
	p, _ := configureSigned(t, raw)
	return p
}

// configureSigned is configure with a fresh signing key in a publish block
// that names none (a published image is always signed); it returns the
// public key's path.
func configureSigned(t *testing.T, raw map[string]interface{}) (*PostProcessor, string) {
	t.Helper()
	if _, ok := raw["waivers"]; !ok {
		raw = maps.Clone(raw)
		raw["waivers"] = writeWaivers(t, plainDiskWaiver)
	}
	var pub string
	if pb, ok := raw["publish"].(map[string]interface{}); ok {
		if _, ok := pb["signing"]; !ok {
			var priv string
			priv, pub = testsign.ECDSAKeyFiles(t)
			// Copies: callers share one map across subtests.
			raw, pb = maps.Clone(raw), maps.Clone(pb)
			pb["signing"] = map[string]interface{}{"key_file": priv}
			raw["publish"] = pb
		}
	}
	p := &PostProcessor{SBOM: fakeSBOM, Vulnerabilities: trivy.VulnerabilitiesCollector,
		Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }}
	if err := p.Configure(raw); err != nil {
		t.Fatal(err)
	}
	return p, pub
}

func TestFailingGatePushesNothing(t *testing.T) {
	host := newRegistry(t)
	art := diskArtifact(t, weak, true)
	p := configure(t, map[string]interface{}{"publish": map[string]interface{}{"repository": host + "/gpu/weak"}})
	u := newUI()
	_, keep, force, err := p.PostProcess(context.Background(), u, art)
	if err == nil {
		t.Fatal("a weak image passed the gate")
	}
	if !keep || !force {
		t.Error("the gate must never ask Packer to destroy the input artifact")
	}
	if !strings.Contains(err.Error(), "fails policy at or above high") || !strings.Contains(err.Error(), "nothing published") {
		t.Errorf("err = %v", err)
	}
	if repos := catalog(t, host); len(repos) != 0 {
		t.Errorf("a failing gate pushed %v", repos)
	}
	if !strings.Contains(u.out.String(), "fail high GH-") {
		t.Errorf("the UI does not list the failures:\n%s", u.out)
	}
	// The reports are still written, for the reviewer of the failed build.
	for _, f := range evaluation.DefaultReports("") {
		path := evaluation.ReportPath(art.files[0], "gate", f)
		if _, err := os.Stat(path); err != nil {
			t.Errorf("%s report: %v", f, err)
		}
	}
	var rep reports.Report
	data, _ := os.ReadFile(art.files[0] + ".gate.json")
	if err := json.Unmarshal(data, &rep); err != nil || rep.Summary.ByStatus["fail"] == 0 || rep.Target.Kind != "image" {
		t.Errorf("json report: %v %+v", err, rep.Summary)
	}
}

func TestPassingGatePublishesWithThreeReferrers(t *testing.T) {
	host := newRegistry(t)
	art := diskArtifact(t, hardened, true)
	t.Setenv("GATE_TEST_USER", "ci")
	t.Setenv("GATE_TEST_PASS", "very-secret-token")
	p := configure(t, map[string]interface{}{
		"params":  params,
		"reports": []string{"json", "sarif"},
		"publish": map[string]interface{}{"repository": host + "/gpu/hardened", "username_env": "GATE_TEST_USER", "password_env": "GATE_TEST_PASS"},
	})
	u := newUI()
	out, _, _, err := p.PostProcess(context.Background(), u, art)
	if err != nil {
		t.Fatalf("%v\n%s", err, u.out)
	}
	if strings.Contains(u.out.String(), "very-secret-token") {
		t.Error("the UI shows the registry password")
	}
	res, ok := out.State("published").(*publish.Result)
	if !ok || res == nil {
		t.Fatalf("no publish result in the artifact's state: %#v", out.State("published"))
	}
	if want := host + "/gpu/hardened:debian-12-gpu-20260102T030405Z"; res.Ref != want {
		t.Errorf("ref %s, want %s", res.Ref, want)
	}
	if out.Id() != res.Ref+"@"+res.Image.Digest || !strings.Contains(u.out.String(), res.Image.Digest) {
		t.Errorf("id %s; ui:\n%s", out.Id(), u.out)
	}
	if got := out.State("reports").([]string); len(got) != 2 || !strings.HasSuffix(got[1], ".gate.sarif") {
		t.Errorf("reports %v", got)
	}

	refs := threeReferrers(t, host+"/gpu/hardened@"+res.Image.Digest)
	// The manifest referrer carries the image's own baked manifest.
	for _, r := range refs {
		if r.ArtifactType != publish.ArtifactTypeManifest {
			continue
		}
		if got := referrerContent(t, host+"/gpu/hardened@"+r.Digest.String()); string(got) != bakedManifest {
			t.Errorf("manifest referrer holds %q", got)
		}
	}
	if repos := catalog(t, host); !slices.Equal(repos, []string{"gpu/hardened"}) {
		t.Errorf("catalog %v", repos)
	}
}

// threeReferrers lists the referrers of ref and checks that they are
// exactly the report, the manifest and the SBOM.
func threeReferrers(t *testing.T, ref string, opts ...publish.Option) []v1.Descriptor {
	t.Helper()
	refs, err := publish.Referrers(context.Background(), ref, opts...)
	if err != nil {
		t.Fatal(err)
	}
	types := make([]string, 0, len(refs))
	for _, r := range refs {
		types = append(types, r.ArtifactType)
	}
	slices.Sort(types)
	if want := []string{publish.ArtifactTypeSBOM, publish.ArtifactTypeManifest, publish.ArtifactTypeReport}; !slices.Equal(types, want) {
		t.Errorf("referrers of %s: %v, want exactly %v", ref, types, want)
	}
	return refs
}

// referrerContent is the one blob a referrer manifest carries.
func referrerContent(t *testing.T, ref string) []byte {
	t.Helper()
	img, err := remote.Image(mustDigest(t, ref))
	if err != nil {
		t.Fatal(err)
	}
	ls, err := img.Layers()
	if err != nil || len(ls) != 1 {
		t.Fatalf("referrer %s: %d layers, %v", ref, len(ls), err)
	}
	rc, err := ls[0].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	got, err := io.ReadAll(rc)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

func mustDigest(t *testing.T, s string) name.Digest {
	t.Helper()
	d, err := name.NewDigest(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestDirArtifactWithoutPublish(t *testing.T) {
	rootfs := copyRootfs(t, hardened, false)
	art := (&fakeArtifact{files: []string{rootfs}, state: map[string]interface{}{}}).withRootfs(rootfs)
	p := configure(t, map[string]interface{}{"params": params, "reports": []string{"html"}})
	out, _, _, err := p.PostProcess(context.Background(), newUI(), art)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(rootfs + ".gate.html"); err != nil {
		t.Error(err)
	}
	if out.State("published").(*publish.Result) != nil || out.BuilderId() != BuilderID {
		t.Errorf("artifact %v", out)
	}
	// Destroying the gate's artifact removes its reports, never the rootfs.
	if err := out.Destroy(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(rootfs + ".gate.html"); !os.IsNotExist(err) {
		t.Error("report kept after Destroy")
	}
	if _, err := os.Stat(filepath.Join(rootfs, "etc/os-release")); err != nil {
		t.Error("Destroy touched the rootfs")
	}
}

// TestPublishNeedsAllEvidence: no push without a disk image, an SBOM
// generator, the rootfs for the SBOM, or the baked manifest.
func TestPublishNeedsAllEvidence(t *testing.T) {
	host := newRegistry(t)
	pub := map[string]interface{}{"params": params, "publish": map[string]interface{}{"repository": host + "/gpu/x"}}
	noManifest := diskArtifact(t, hardened, false)
	withManifest := diskArtifactWithoutSBOM(t, hardened)
	dirOnly := copyRootfs(t, hardened, true)
	for _, tc := range []struct {
		name   string
		art    *fakeArtifact
		noSBOM bool
		want   string
	}{
		{"no manifest", noManifest, false, "has no /etc/gpuhost/manifest.json"},
		{"no sbom generator", withManifest, true, "no SBOM generator"},
		{"rootfs removed", &fakeArtifact{files: withManifest.files, state: map[string]interface{}{"rootfs": ""}}, false, "no SBOM can be made"},
		{"dir artifact", (&fakeArtifact{files: []string{dirOnly}, state: map[string]interface{}{}}).withRootfs(dirOnly), false, "no disk image to push"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := configure(t, pub)
			if tc.noSBOM {
				p.SBOM = nil
			}
			_, _, _, err := p.PostProcess(context.Background(), newUI(), tc.art)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if repos := catalog(t, host); len(repos) != 0 {
		t.Errorf("pushed %v", repos)
	}
}

// TestPublishAttachesTheCarriedSBOM: an image that carries its SBOM is
// published with that SBOM, even with its rootfs gone and no generator.
func TestPublishAttachesTheCarriedSBOM(t *testing.T) {
	host := newRegistry(t)
	art := diskArtifact(t, hardened, true)
	art = &fakeArtifact{files: art.files, state: map[string]interface{}{"rootfs": ""}}
	p := configure(t, map[string]interface{}{"params": params, "reports": []string{"json"}, "publish": map[string]interface{}{"repository": host + "/gpu/carried"}})
	p.SBOM = nil
	u := newUI()
	out, _, _, err := p.PostProcess(context.Background(), u, art)
	if err != nil {
		t.Fatalf("%v\n%s", err, u.out)
	}
	res := out.State("published").(*publish.Result)
	want, err := os.ReadFile(filepath.Join(hardened, filepath.FromSlash(packages.SBOMPath)))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range threeReferrers(t, host+"/gpu/carried@"+res.Image.Digest) {
		if r.ArtifactType != publish.ArtifactTypeSBOM {
			continue
		}
		if got := referrerContent(t, host+"/gpu/carried@"+r.Digest.String()); !bytes.Equal(got, want) {
			t.Errorf("SBOM referrer is not the SBOM the image carries (%d bytes, want %d)", len(got), len(want))
		}
	}
}

func TestUntrustedScanFailsTheBuild(t *testing.T) {
	art := diskArtifact(t, hardened, true)
	// Cut the image short: the ext4 superblock says more than is there.
	if err := os.Truncate(art.files[0], 1<<20); err != nil {
		t.Fatal(err)
	}
	p := configure(t, map[string]interface{}{"params": params})
	_, _, _, err := p.PostProcess(context.Background(), newUI(), art)
	if err == nil {
		t.Fatal("a truncated image passed the gate")
	}
}

func TestArtifactWithNothingToScan(t *testing.T) {
	p := configure(t, map[string]interface{}{})
	_, _, _, err := p.PostProcess(context.Background(), newUI(), &fakeArtifact{files: []string{"/tmp/x.ami"}, state: map[string]interface{}{}})
	if err == nil || !strings.Contains(err.Error(), "no .qcow2, .raw or .img file and no rootfs directory") {
		t.Errorf("err = %v", err)
	}
}

func TestBrokenPolicyFailsTheBuild(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bad.rego"), []byte("package gpuhost.x.y\n\ndeny contains msg if {"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := new(PostProcessor).Configure(map[string]interface{}{"policy": []string{dir}})
	if err == nil || !strings.Contains(err.Error(), "bad.rego") {
		t.Errorf("err = %v", err)
	}
}

func TestMissingFilesFailConfigure(t *testing.T) {
	for field, want := range map[string]string{
		"params":  "reading params",
		"waivers": "nope.yaml",
	} {
		err := new(PostProcessor).Configure(map[string]interface{}{field: filepath.Join(t.TempDir(), "nope.yaml")})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want %q", field, err, want)
		}
	}
}

func TestUnconfiguredRefuses(t *testing.T) {
	rootfs := copyRootfs(t, hardened, false)
	_, _, _, err := new(PostProcessor).PostProcess(context.Background(), newUI(), (&fakeArtifact{state: map[string]interface{}{}}).withRootfs(rootfs))
	if err == nil {
		t.Error("an unconfigured gate passed")
	}
}

// TestQCOW2Artifact: the rootfs builder's qcow2 output is scanned and
// pushed as a qcow2 layer.
func TestQCOW2Artifact(t *testing.T) {
	if _, err := exec.LookPath("qemu-img"); err != nil {
		t.Skip("qemu-img is missing (qemu-utils): cannot make a qcow2 image")
	}
	art := diskArtifact(t, hardened, true)
	qcow := strings.TrimSuffix(art.files[0], ".raw") + ".qcow2"
	if out, err := exec.Command("qemu-img", "convert", "-c", "-O", "qcow2", art.files[0], qcow).CombinedOutput(); err != nil {
		t.Fatalf("qemu-img: %v\n%s", err, out)
	}
	art.files = []string{qcow}
	host := newRegistry(t)
	p := configure(t, map[string]interface{}{"params": params, "reports": []string{"json"},
		"publish": map[string]interface{}{"repository": host + "/gpu/q", "tag": "v1"}})
	out, _, _, err := p.PostProcess(context.Background(), newUI(), art)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(qcow + ".gate.json"); err != nil {
		t.Error(err)
	}
	img, err := remote.Image(mustDigest(t, host+"/gpu/q@"+out.State("published").(*publish.Result).Image.Digest))
	if err != nil {
		t.Fatal(err)
	}
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Layers) != 1 || m.Layers[0].MediaType != publish.MediaTypeQCOW2 {
		t.Errorf("layers %+v", m.Layers)
	}
	threeReferrers(t, host+"/gpu/q:v1")
}

// TestVerifiedPackRefusesUnsignedWaivers: a gate that verifies its policy
// bundles takes only waivers signed with the same key, as the CLI does.
func TestVerifiedPackRefusesUnsignedWaivers(t *testing.T) {
	priv, pub := testsign.RSAKeyPEM(t)
	dir := t.TempDir()
	key := filepath.Join(dir, "pub.pem")
	if err := os.WriteFile(key, []byte(pub), 0o644); err != nil {
		t.Fatal(err)
	}
	var pack bytes.Buffer
	if err := bundle.Write(&pack, policies.FS, "embedded", bundle.Options{SigningKey: priv}); err != nil {
		t.Fatal(err)
	}
	bundle := filepath.Join(dir, "pack.tar.gz")
	if err := os.WriteFile(bundle, pack.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	w := filepath.Join(dir, "waivers.yaml")
	if err := os.WriteFile(w, []byte("- id: GH-SSH-001\n  target: \"*\"\n  justification: lab\n  approved_by: sec@example.com\n  ticket: SEC-1\n  expires: \"2099-01-01\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := new(PostProcessor).Configure(map[string]interface{}{"policy": []string{bundle}, "params": params, "waivers": w, "verification_key": key})
	if err == nil || !strings.Contains(err.Error(), "waivers.yaml.sig") {
		t.Errorf("err = %v, want a refusal naming the missing waivers.yaml.sig", err)
	}
}

// TestTrivyDBJudgesTheImage: with fail_on_skip = "critical" the gate needs
// vulnerability facts, and with trivy_db it matches the image's packages:
// the demo's DB passes today's openssl, a DB where openssl's fix is newer
// than the image's fails the build on GH-SC-001.
func TestTrivyDBJudgesTheImage(t *testing.T) {
	demo, err := trivy.ReadFixture("../../images/trivy-db-demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	poisoned := demo
	published := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	poisoned.Advisories = append(slices.Clone(demo.Advisories), trivy.FixtureAdvisory{Bucket: "debian 12", Package: "openssl", ID: "CVE-2099-0001", Fixed: "3.0.99-1"})
	poisoned.Vulnerabilities = append(slices.Clone(demo.Vulnerabilities), trivy.FixtureVulnerability{ID: "CVE-2099-0001", Title: "test", Severity: map[string]string{"nvd": "CRITICAL"}, Published: &published})
	db := func(fx trivy.Fixture) string {
		dir := t.TempDir()
		if err := trivy.WriteDB(dir, fx); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	for _, tc := range []struct {
		name, db, wantErr string
	}{
		{"no DB", "", "GH-SC-001"},
		{"demo DB", db(demo), ""},
		{"fix newer than the image", db(poisoned), "GH-SC-001"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := map[string]interface{}{"params": params, "fail_on_skip": "critical", "reports": []string{"json"}}
			if tc.db != "" {
				raw["trivy_db"] = tc.db
			}
			u, err := gateRootfs(t, raw)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("gate failed: %v\n%s", err, u.out)
			case tc.wantErr != "" && err == nil:
				t.Fatalf("gate passed; want a failure naming %s\n%s", tc.wantErr, u.out)
			case tc.wantErr != "" && !strings.Contains(u.out.String()+err.Error(), tc.wantErr):
				t.Fatalf("gate failed without naming %s: %v\n%s", tc.wantErr, err, u.out)
			}
		})
	}
}

// gateRootfs runs the gate, configured by raw, with vulnerability
// matching, on the hardened sample as a rootfs directory.
func gateRootfs(t *testing.T, raw map[string]interface{}) (ui, error) {
	t.Helper()
	rootfs := copyRootfs(t, hardened, true)
	art := (&fakeArtifact{files: []string{rootfs}, state: map[string]interface{}{}}).withRootfs(rootfs)
	p := &PostProcessor{SBOM: fakeSBOM, Vulnerabilities: trivy.VulnerabilitiesCollector}
	if err := p.Configure(raw); err != nil {
		t.Fatal(err)
	}
	u := newUI()
	_, _, _, err := p.PostProcess(context.Background(), u, art)
	return u, err
}

// TestVulnerabilitiesBlock: the gate's vulnerabilities block sets the
// threshold GH-SC-001 holds the image to. A fixable high CVE passes the
// default (critical) and fails at fail_on = "high"; an unfixed critical
// one passes until ignore_unfixed = false; a long grace period lets both
// through.
func TestVulnerabilitiesBlock(t *testing.T) {
	demo, err := trivy.ReadFixture("../../images/trivy-db-demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	published := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	fx := demo
	fx.Advisories = append(slices.Clone(demo.Advisories),
		trivy.FixtureAdvisory{Bucket: "debian 12", Package: "openssl", ID: "CVE-2099-0002", Fixed: "3.0.99-1"},
		trivy.FixtureAdvisory{Bucket: "debian 12", Package: "openssl", ID: "CVE-2099-0003"})
	fx.Vulnerabilities = append(slices.Clone(demo.Vulnerabilities),
		trivy.FixtureVulnerability{ID: "CVE-2099-0002", Title: "test", Severity: map[string]string{"nvd": "HIGH"}, Published: &published},
		trivy.FixtureVulnerability{ID: "CVE-2099-0003", Title: "test", Severity: map[string]string{"nvd": "CRITICAL"}, Published: &published})
	db := t.TempDir()
	if err := trivy.WriteDB(db, fx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		vulns   map[string]interface{}
		wantErr string
	}{
		{"defaults", nil, ""},
		{"fail_on high", map[string]interface{}{"fail_on": "high"}, "CVE-2099-0002"},
		{"unfixed counted", map[string]interface{}{"ignore_unfixed": false}, "CVE-2099-0003"},
		{"long grace", map[string]interface{}{"fail_on": "high", "ignore_unfixed": false, "grace_days": 100000}, ""},
		{"a DB of today within any age limit", map[string]interface{}{"max_db_age_days": 0}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw := map[string]interface{}{"params": params, "reports": []string{"json"}, "trivy_db": db}
			if tc.vulns != nil {
				raw["vulnerabilities"] = tc.vulns
			}
			u, err := gateRootfs(t, raw)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("gate failed: %v\n%s", err, u.out)
			case tc.wantErr != "" && (err == nil || !strings.Contains(u.out.String(), tc.wantErr)):
				t.Fatalf("err = %v; want a failure naming %s\n%s", err, tc.wantErr, u.out)
			}
		})
	}
}

func TestTrivyDBNeedsMatching(t *testing.T) {
	p := &PostProcessor{SBOM: fakeSBOM}
	err := p.Configure(map[string]interface{}{"params": params, "trivy_db": t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "trivy_db") {
		t.Fatalf("Configure = %v; want a refusal naming trivy_db", err)
	}
}

// TestEvidenceOfAnEncryptedRootComesFromItsTree: the manifest and SBOM a
// publish attaches are read from the rootfs an encrypted root was made
// from, since its disk cannot be read without the key (make demo's publish
// of the LUKS2 image failed there after the gate had passed it).
func TestEvidenceOfAnEncryptedRootComesFromItsTree(t *testing.T) {
	tree := copyRootfs(t, hardened, true)
	disk := filepath.Join(t.TempDir(), "disk.qcow2")
	if err := os.WriteFile(disk, []byte("not readable without its key"), 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(tree, "etc/gpuhost/manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := readFromTarget(artifact{disk: disk, rootfs: tree, encrypted: true}, "/etc/gpuhost/manifest.json")
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("the manifest of an encrypted root: %d bytes, %v; want the tree's %d", len(got), err, len(want))
	}
	if _, err := readFromTarget(artifact{disk: disk, rootfs: tree}, "/etc/gpuhost/manifest.json"); err == nil {
		t.Error("an unencrypted target's manifest was not read from its disk")
	}
}
