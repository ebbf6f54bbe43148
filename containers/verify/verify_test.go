package verify

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"

	"github.com/gpuhost/gpuhost/containers/provenance"
	"github.com/gpuhost/gpuhost/containers/publish"
	"github.com/gpuhost/gpuhost/containers/sign"
	"github.com/gpuhost/gpuhost/internal/testutil/testsign"
	"github.com/gpuhost/gpuhost/reports"
)

var policyDigest = "sha256:" + strings.Repeat("ab", 32)

// image is what a test publishes: the report's results, and edits to the
// provenance before it is signed.
type image struct {
	results []reports.Result
	scanned time.Time
	edit    func(*provenance.Build)
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

// publishImage pushes a small disk with a report, manifest and SBOM to an
// in-process registry, then signs it and attaches provenance as the gate
// does, and returns the reference and the verifier of the key.
func publishImage(t *testing.T, img image) (string, sign.Verifier) {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true)))
	t.Cleanup(srv.Close)
	disk := filepath.Join(t.TempDir(), "disk.raw")
	if err := os.WriteFile(disk, []byte(strings.Repeat("disk", 1024)), 0o644); err != nil {
		t.Fatal(err)
	}
	if img.scanned.IsZero() {
		img.scanned = time.Now()
	}
	rep := reports.Report{Schema: reports.Schema, PolicyDigest: policyDigest, Results: img.results,
		Target: reports.Target{Kind: "image", Ref: disk, ScannedAt: img.scanned.UTC().Format(time.RFC3339)}}
	report, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	man := []byte(`{"schema":"gpuhost.manifest/v1","pins":{"packages":[],"ngc_images":[]},"packages":[],"config_files":[],"build":{"time":"2026-01-01T00:00:00Z"}}`)
	sbom := []byte(`{"bomFormat":"CycloneDX","specVersion":"1.6"}`)
	priv, pub := testsign.ECDSAKeyPEM(t, "")
	s, err := sign.LoadPrivateKey(priv, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := sign.LoadPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	hook := func(ctx context.Context, d name.Digest, res publish.Result) error {
		b := provenance.Build{Repository: d.Context().Name(), ImageDigest: d.DigestStr(), PluginVersion: "test",
			Gate: provenance.Gate{Verdict: provenance.VerdictPass, PolicyDigest: policyDigest, FailOn: "high"},
			Evidence: []provenance.Evidence{
				{Name: provenance.Report, Digest: digestOf(report)},
				{Name: provenance.Manifest, Digest: digestOf(man)},
				{Name: provenance.SBOM, Digest: digestOf(sbom)},
				{Name: provenance.Disk, Digest: res.DiskDigest},
			},
			FinishedOn: time.Now()}
		if img.edit != nil {
			img.edit(&b)
		}
		st, err := provenance.Statement(b)
		if err != nil {
			return err
		}
		if _, err := sign.Sign(ctx, s, d); err != nil {
			return err
		}
		_, err = sign.Attest(ctx, s, d, st, provenance.PredicateType)
		return err
	}
	ref := strings.TrimPrefix(srv.URL, "http://") + "/gpu/img:v1"
	res, err := publish.New(publish.WithBeforeTag(hook)).Push(context.Background(), ref, disk, []publish.Evidence{
		{ArtifactType: publish.ArtifactTypeReport, Data: report},
		{ArtifactType: publish.ArtifactTypeManifest, Data: man},
		{ArtifactType: publish.ArtifactTypeSBOM, Data: sbom},
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSuffix(ref, ":v1") + "@" + res.Image.Digest, v
}

var passing = []reports.Result{
	{ID: "GH-SSH-001", Severity: "high", Status: reports.StatusPass, Messages: []string{}},
	{ID: "GH-SSH-008", Severity: "low", Status: reports.StatusFail, Messages: []string{"weak"}},
}

func TestVerifyAccepts(t *testing.T) {
	ref, v := publishImage(t, image{results: passing})
	res, err := Verify(context.Background(), ref, Options{Key: v, PolicyDigest: policyDigest, MaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 0 || res.Report.PolicyDigest != policyDigest || len(res.Evidence) != 3 {
		t.Errorf("result %+v", res)
	}
}

// TestVerifyPolicyProblems: authentic, but the caller's policy refuses.
func TestVerifyPolicyProblems(t *testing.T) {
	ref, v := publishImage(t, image{results: passing, scanned: time.Now().Add(-8 * 24 * time.Hour)})
	res, err := Verify(context.Background(), ref, Options{Key: v, FailOn: "low", MaxAge: 7 * 24 * time.Hour,
		PolicyDigest: "sha256:" + strings.Repeat("00", 32)})
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(res.Problems, "\n")
	for _, want := range []string{"made with policy " + policyDigest, "fails at low: [GH-SSH-008 (low)]", "old (scanned"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
}

// TestVerifyRefusesProvenance: a statement the key signed is still refused
// when it is about another image, has another verdict, lists another
// disk, or names another policy than the report.
func TestVerifyRefusesProvenance(t *testing.T) {
	for name, tc := range map[string]struct {
		edit func(*provenance.Build)
		want string
	}{
		"another subject": {func(b *provenance.Build) { b.ImageDigest = "sha256:" + strings.Repeat("1", 64) }, "about another image"},
		"another verdict": {func(b *provenance.Build) { b.Gate.Verdict = "fail" }, `verdict is "fail"`},
		"another disk":    {func(b *provenance.Build) { b.Evidence[3].Digest = "sha256:" + strings.Repeat("2", 64) }, "the disk layer is"},
		"another policy":  {func(b *provenance.Build) { b.Gate.PolicyDigest = "sha256:" + strings.Repeat("3", 64) }, "is not the provenance's"},
		"no SBOM listed":  {func(b *provenance.Build) { b.Evidence = append(b.Evidence[:2], b.Evidence[3]) }, "lists no sbom"},
	} {
		t.Run(name, func(t *testing.T) {
			ref, v := publishImage(t, image{results: passing, edit: tc.edit})
			_, err := Verify(context.Background(), ref, Options{Key: v})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestVerifyRefusesAnErroredReport(t *testing.T) {
	ref, v := publishImage(t, image{results: []reports.Result{{ID: "GH-SSH-001", Severity: "high", Status: reports.StatusError, Messages: []string{"x"}}}})
	if _, err := Verify(context.Background(), ref, Options{Key: v}); err == nil || !strings.Contains(err.Error(), "errored checks") {
		t.Errorf("err = %v", err)
	}
}
