package gate

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
	govex "github.com/openvex/go-vex/pkg/vex"

	"github.com/gpuhost/gpuhost/containers/provenance"
	"github.com/gpuhost/gpuhost/containers/publish"
	"github.com/gpuhost/gpuhost/containers/sign"
	"github.com/gpuhost/gpuhost/containers/trivy"
	"github.com/gpuhost/gpuhost/containers/verify"
	"github.com/gpuhost/gpuhost/internal/testutil/testsign"
	"github.com/gpuhost/gpuhost/internal/userfile"
)

// TestPublishedImageIsSignedWithProvenance: the gate signs the pushed
// image and attaches provenance listing the template, pins and evidence;
// gpuhost's verifier and the real cosign both accept it.
func TestPublishedImageIsSignedWithProvenance(t *testing.T) {
	host := newRegistry(t)
	art := diskArtifact(t, hardened, true)
	p, pub := configureSigned(t, map[string]interface{}{
		"params": params, "reports": []string{"json"},
		"publish": map[string]interface{}{"repository": host + "/gpu/signed", "tag": "v1",
			"template_file": "gate_test.go", "lock_file": "config_test.go"},
	})
	u := newUI()
	out, _, _, err := p.PostProcess(context.Background(), u, art)
	if err != nil {
		t.Fatalf("%v\n%s", err, u.out)
	}
	res := out.State("published").(*publish.Result)
	ref := host + "/gpu/signed@" + res.Image.Digest
	if !strings.Contains(u.out.String(), "signature "+host+"/gpu/signed:sha256-") {
		t.Errorf("the UI does not show the signature:\n%s", u.out)
	}

	v := publicKey(t, pub)
	got, err := verify.Verify(context.Background(), ref, verify.Options{Key: v, MaxAge: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Problems) != 0 {
		t.Errorf("problems %v", got.Problems)
	}
	prov := got.Provenance
	if prov.Gate.PolicyDigest != got.Report.PolicyDigest || prov.Gate.FailOn != "high" ||
		prov.Evidence[provenance.Disk].Digest != res.DiskDigest {
		t.Errorf("provenance %+v", prov)
	}
	// The statement names the template and lock file by digest.
	ext, err := json.Marshal(prov.Predicate.GetBuildDefinition().GetExternalParameters())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"gate_test.go"`, `"config_test.go"`} {
		if !strings.Contains(string(ext), want) {
			t.Errorf("external parameters lack %s: %s", want, ext)
		}
	}

	testsign.CosignVerifies(t, ref, pub, nil)
}

// TestSigningFailurePushesNoTag: a key that cannot be read stops the
// build before anything is pushed.
func TestSigningFailurePushesNoTag(t *testing.T) {
	host := newRegistry(t)
	t.Setenv("GATE_TEST_KEY", "not a key")
	p := configure(t, map[string]interface{}{"params": params, "reports": []string{"json"},
		"publish": map[string]interface{}{"repository": host + "/gpu/x", "tag": "v1",
			"signing": map[string]interface{}{"key_env": "GATE_TEST_KEY"}}})
	u := newUI()
	_, _, _, err := p.PostProcess(context.Background(), u, diskArtifact(t, hardened, true))
	if err == nil || !strings.Contains(err.Error(), "publish.signing.key_env GATE_TEST_KEY") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(u.out.String()+err.Error(), "not a key") {
		t.Error("the key's content is shown")
	}
	if repos := catalog(t, host); len(repos) != 0 {
		t.Errorf("pushed %v", repos)
	}
	r, _ := name.ParseReference(host + "/gpu/x:v1")
	if _, err := remote.Head(r); err == nil {
		t.Error("the tag was pushed")
	}
}

// TestEncryptedKeyFromEnv: cosign's encrypted key format, handed over in
// the environment with its password.
func TestEncryptedKeyFromEnv(t *testing.T) {
	host := newRegistry(t)
	priv, pub := testsign.ECDSAKeyPEM(t, "hunter2")
	t.Setenv("GATE_TEST_KEY", string(priv))
	t.Setenv("GATE_TEST_KEY_PASSWORD", "hunter2")
	p := configure(t, map[string]interface{}{"params": params, "reports": []string{"json"},
		"publish": map[string]interface{}{"repository": host + "/gpu/enc", "tag": "v1",
			"signing": map[string]interface{}{"key_env": "GATE_TEST_KEY", "password_env": "GATE_TEST_KEY_PASSWORD"}}})
	u := newUI()
	out, _, _, err := p.PostProcess(context.Background(), u, diskArtifact(t, hardened, true))
	if err != nil {
		t.Fatalf("%v\n%s", err, u.out)
	}
	if strings.Contains(u.out.String(), "hunter2") || strings.Contains(u.out.String(), "PRIVATE KEY") {
		t.Error("the UI shows the key or its password")
	}
	v, err := sign.LoadPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	d, err := name.NewDigest(host + "/gpu/enc@" + out.State("published").(*publish.Result).Image.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if err := sign.VerifySignature(context.Background(), v, d); err != nil {
		t.Fatal(err)
	}
}

// cveFixture is a vulnerability DB in which the hardened sample's openssl
// has a fixable critical CVE, CVE-2099-0001, published long ago, and a
// waiver file whose cve list accepts it.
func cveFixture(t *testing.T) (db, waiverFile string) {
	t.Helper()
	demo, err := trivy.ReadFixture("../../images/trivy-db-demo.yaml")
	if err != nil {
		t.Fatal(err)
	}
	published := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	fx := demo
	fx.Advisories = append(slices.Clone(demo.Advisories), trivy.FixtureAdvisory{Bucket: "debian 12", Package: "openssl", ID: "CVE-2099-0001", Fixed: "3.0.99-1"})
	fx.Vulnerabilities = append(slices.Clone(demo.Vulnerabilities), trivy.FixtureVulnerability{ID: "CVE-2099-0001", Title: "test", Severity: map[string]string{"nvd": "CRITICAL"}, Published: &published})
	db = t.TempDir()
	if err := trivy.WriteDB(db, fx); err != nil {
		t.Fatal(err)
	}
	waiverFile = writeWaivers(t, `- id: GH-SC-001
  cve: [CVE-2099-0001]
  target: "*"
  justification: the fix is being qualified; the vulnerable API is unused
  approved_by: sec-team@example.com
  expires: "2099-01-01"
  ticket: SEC-100
`, plainDiskWaiver)
	return db, waiverFile
}

// publicKey reads the PEM public key file pub.
func publicKey(t *testing.T, pub string) sign.Verifier {
	t.Helper()
	pem, err := userfile.Read(pub, userfile.MaxKey)
	if err != nil {
		t.Fatal(err)
	}
	v, err := sign.LoadPublicKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestCVEWaiverExportsVEX: a fixable critical CVE fails the gate; a waiver
// with a cve list makes it pass, and the published image carries an
// OpenVEX referrer saying so, listed in the signed provenance, which
// gpuhost's verifier checks.
func TestCVEWaiverExportsVEX(t *testing.T) {
	db, waiverFile := cveFixture(t)
	host := newRegistry(t)
	run := func(raw map[string]interface{}) (packersdk.Artifact, string, error) {
		priv, pub := testsign.ECDSAKeyFiles(t)
		raw["publish"] = map[string]interface{}{"repository": host + "/gpu/vex", "tag": "v1", "signing": map[string]interface{}{"key_file": priv}}
		p := &PostProcessor{SBOM: fakeSBOM, Vulnerabilities: trivy.VulnerabilitiesCollector}
		if err := p.Configure(raw); err != nil {
			t.Fatal(err)
		}
		u := newUI()
		out, _, _, err := p.PostProcess(context.Background(), u, diskArtifact(t, hardened, true))
		if err != nil {
			return nil, u.out.String(), err
		}
		return out, pub, nil
	}
	if _, log, err := run(map[string]interface{}{"params": params, "reports": []string{"json"}, "trivy_db": db}); err == nil || !strings.Contains(log, "CVE-2099-0001") {
		t.Fatalf("no waiver: err = %v\n%s", err, log)
	}
	out, pub, err := run(map[string]interface{}{"params": params, "reports": []string{"json"}, "trivy_db": db, "waivers": waiverFile})
	if err != nil {
		t.Fatalf("with the CVE waiver: %v\n%s", err, pub)
	}
	res := out.State("published").(*publish.Result)
	ref := host + "/gpu/vex@" + res.Image.Digest
	v := publicKey(t, pub)
	got, err := verify.Verify(context.Background(), ref, verify.Options{Key: v})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Problems) != 0 || got.Evidence[provenance.VEX] == "" {
		t.Fatalf("verify: problems %v, evidence %v", got.Problems, got.Evidence)
	}
	doc, err := govex.Parse(referrerContent(t, host+"/gpu/vex@"+got.Evidence[provenance.VEX]))
	if err != nil {
		t.Fatal(err)
	}
	if len(doc.Statements) != 1 || doc.Statements[0].Vulnerability.Name != "CVE-2099-0001" || doc.Statements[0].Status != govex.StatusNotAffected ||
		!strings.Contains(doc.Statements[0].Products[0].ID, "@"+res.Image.Digest) {
		t.Errorf("VEX statements %+v", doc.Statements)
	}
	testsign.CosignVerifies(t, ref, pub, nil)
}
