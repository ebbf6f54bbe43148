package verify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

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

// fixture is a published image in an in-process registry, and the means
// to play the attacker: push straight into the registry, or put a handler
// in front of it.
type fixture struct {
	ref  name.Digest
	key  sign.Verifier
	host string
	// reg is the registry itself, which junk is pushed to without a
	// round trip over the network.
	reg http.Handler
	// front, when set, answers in the registry's place.
	front atomic.Pointer[http.Handler]
	// referrers are the signed referrer manifests by artifact type.
	referrers map[string]string
	// subject is the image's descriptor, once junk asked for it.
	subject *v1.Descriptor
}

func (f *fixture) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h := f.front.Load(); h != nil {
		(*h).ServeHTTP(w, r)
		return
	}
	f.reg.ServeHTTP(w, r)
}

func (f *fixture) setFront(h http.Handler) { f.front.Store(&h) }

// publishImage pushes a small disk with a report, manifest and SBOM to an
// in-process registry, then signs it and attaches provenance as the gate
// does, naming each referrer manifest by digest.
func publishImage(t testing.TB, img image) *fixture {
	t.Helper()
	f := &fixture{reg: registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithReferrersSupport(true)),
		referrers: map[string]string{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	f.host = strings.TrimPrefix(srv.URL, "http://")
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
	if f.key, err = sign.LoadPublicKey(pub); err != nil {
		t.Fatal(err)
	}
	hook := func(ctx context.Context, d name.Digest, res publish.Result) error {
		for _, r := range res.Referrers {
			f.referrers[r.ArtifactType] = r.Digest
		}
		b := provenance.Build{Repository: d.Context().Name(), ImageDigest: d.DigestStr(), PluginVersion: "test",
			Gate: provenance.Gate{Verdict: provenance.VerdictPass, PolicyDigest: policyDigest, FailOn: "high"},
			Evidence: []provenance.Evidence{
				{Name: provenance.Report, Digest: digestOf(report), Referrer: f.referrers[publish.ArtifactTypeReport]},
				{Name: provenance.Manifest, Digest: digestOf(man), Referrer: f.referrers[publish.ArtifactTypeManifest]},
				{Name: provenance.SBOM, Digest: digestOf(sbom), Referrer: f.referrers[publish.ArtifactTypeSBOM]},
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
	tag := f.host + "/gpu/img:v1"
	res, err := publish.New(publish.WithBeforeTag(hook)).Push(context.Background(), tag, disk, []publish.Evidence{
		{ArtifactType: publish.ArtifactTypeReport, Data: report},
		{ArtifactType: publish.ArtifactTypeManifest, Data: man},
		{ArtifactType: publish.ArtifactTypeSBOM, Data: sbom},
	})
	if err != nil {
		t.Fatal(err)
	}
	if f.ref, err = name.NewDigest(f.host + "/gpu/img@" + res.Image.Digest); err != nil {
		t.Fatal(err)
	}
	return f
}

// verify runs Verify on the fixture's image with o, which gets the key.
func (f *fixture) verify(o Options) (*Result, error) {
	o.Key = f.key
	return Verify(context.Background(), f.ref.String(), o)
}

// put stores raw as a manifest of the image's repository at digest, as
// anyone with push rights can, straight into the registry; it returns the
// digest of raw.
func (f *fixture) put(t testing.TB, digest string, raw []byte) string {
	t.Helper()
	sum := digestOf(raw)
	if digest == "" {
		digest = sum
	}
	req := httptest.NewRequest(http.MethodPut, "/v2/"+f.ref.RepositoryStr()+"/manifests/"+digest, bytes.NewReader(raw))
	req.Header.Set("Content-Type", string(types.OCIManifestSchema1))
	rec := httptest.NewRecorder()
	f.reg.ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		t.Fatalf("pushing %s: %d %s", digest, rec.Code, rec.Body)
	}
	return sum
}

// junk is an unsigned referrer of the image: a manifest whose subject is
// the image, changed by edit.
func (f *fixture) junk(t testing.TB, edit func(*v1.Manifest)) []byte {
	t.Helper()
	if f.subject == nil {
		desc, err := remote.Head(f.ref)
		if err != nil {
			t.Fatal(err)
		}
		f.subject = &v1.Descriptor{MediaType: desc.MediaType, Size: desc.Size, Digest: desc.Digest}
	}
	m := v1.Manifest{SchemaVersion: 2, MediaType: types.OCIManifestSchema1, ArtifactType: publish.ArtifactTypeReport,
		Config:  v1.Descriptor{MediaType: types.MediaType(publish.ArtifactTypeReport), Size: 2, Digest: v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("4", 64)}},
		Subject: f.subject}
	if edit != nil {
		edit(&m)
	}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

var passing = []reports.Result{
	{ID: "GH-SSH-001", Severity: "high", Status: reports.StatusPass, Messages: []string{}},
	{ID: "GH-SSH-008", Severity: "low", Status: reports.StatusFail, Messages: []string{"weak"}},
}

func TestVerifyAccepts(t *testing.T) {
	f := publishImage(t, image{results: passing})
	res, err := f.verify(Options{PolicyDigest: policyDigest, MaxAge: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Problems) != 0 || res.Report.PolicyDigest != policyDigest || len(res.Evidence) != 3 ||
		res.Evidence[provenance.Report] != f.referrers[publish.ArtifactTypeReport] {
		t.Errorf("result %+v", res)
	}
}

// TestVerifyPolicyProblems: authentic, but the caller's policy refuses.
func TestVerifyPolicyProblems(t *testing.T) {
	f := publishImage(t, image{results: passing, scanned: time.Now().Add(-8 * 24 * time.Hour)})
	res, err := f.verify(Options{FailOn: "low", MaxAge: 7 * 24 * time.Hour,
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
// disk, names another policy than the report, or lists evidence without
// the referrer that carries it.
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
		"no referrer signed": {func(b *provenance.Build) { b.Evidence[2].Referrer = "" },
			"lists the sbom sha256:"},
		"another referrer signed": {func(b *provenance.Build) { b.Evidence[0].Referrer = b.Evidence[1].Referrer },
			"has artifactType"},
	} {
		t.Run(name, func(t *testing.T) {
			f := publishImage(t, image{results: passing, edit: tc.edit})
			_, err := f.verify(Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func TestVerifyRefusesAnErroredReport(t *testing.T) {
	f := publishImage(t, image{results: []reports.Result{{ID: "GH-SSH-001", Severity: "high", Status: reports.StatusError, Messages: []string{"x"}}}})
	if _, err := f.verify(Options{}); err == nil || !strings.Contains(err.Error(), "errored checks") {
		t.Errorf("err = %v", err)
	}
}

// TestVerifyIgnoresUnsignedReferrers: whatever else is attached to the
// image by someone who can push but lacks the key, the signed referrers
// alone decide.
func TestVerifyIgnoresUnsignedReferrers(t *testing.T) {
	f := publishImage(t, image{results: passing})
	failing, err := json.Marshal(reports.Report{Schema: reports.Schema, PolicyDigest: policyDigest,
		Results: []reports.Result{{ID: "GH-SSH-001", Severity: "high", Status: reports.StatusFail, Messages: []string{"x"}}}})
	if err != nil {
		t.Fatal(err)
	}
	l := v1.Descriptor{MediaType: types.MediaType(publish.ArtifactTypeReport), Size: int64(len(failing)),
		Digest: v1.Hash{Algorithm: "sha256", Hex: strings.TrimPrefix(digestOf(failing), "sha256:")}}
	junk := map[string][]byte{
		"no layers":  f.junk(t, nil),
		"wrong type": f.junk(t, func(m *v1.Manifest) { m.ArtifactType, m.Layers = "application/x-junk", []v1.Descriptor{l} }),
		"garbage config": f.junk(t, func(m *v1.Manifest) {
			m.Config = v1.Descriptor{MediaType: "application/x-garbage", Size: 1 << 40, Digest: v1.Hash{Algorithm: "sha256", Hex: strings.Repeat("5", 64)}}
		}),
		"two layers":     f.junk(t, func(m *v1.Manifest) { m.Layers = []v1.Descriptor{l, l} }),
		"another report": f.junk(t, func(m *v1.Manifest) { m.Layers = []v1.Descriptor{l} }),
		"past the manifest cap": f.junk(t, func(m *v1.Manifest) {
			m.Annotations = map[string]string{"pad": strings.Repeat("x", 2*maxManifest)}
		}),
	}
	for _, raw := range junk {
		f.put(t, "", raw)
	}
	// Not a manifest at all: the registry keeps it, but lists it nowhere.
	f.put(t, "", []byte("\x00not a manifest"))
	refs, err := publish.Referrers(context.Background(), f.ref.String())
	if err != nil {
		t.Fatal(err)
	}
	if len(refs) != 3+len(junk) {
		t.Fatalf("the registry lists %d referrers, want %d: the junk is not attached", len(refs), 3+len(junk))
	}
	res, err := f.verify(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for at, n := range map[string]string{publish.ArtifactTypeReport: provenance.Report, publish.ArtifactTypeSBOM: provenance.SBOM} {
		if res.Evidence[n] != f.referrers[at] {
			t.Errorf("%s read from %s, not the signed %s", n, res.Evidence[n], f.referrers[at])
		}
	}
	if len(res.Problems) != 0 {
		t.Errorf("problems %v", res.Problems)
	}
}

// TestVerifyManyReferrers: unsigned referrers are not listed, so any
// number of them leaves the verdict, and the work, as it was.
func TestVerifyManyReferrers(t *testing.T) {
	f := publishImage(t, image{results: passing})
	pushJunk(t, f, 20000)
	if _, err := f.verify(Options{}); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkVerifyManyReferrers(b *testing.B) {
	f := publishImage(b, image{results: passing})
	pushJunk(b, f, 20000)
	b.ResetTimer()
	for b.Loop() {
		if _, err := f.verify(Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// pushJunk attaches n distinct report referrers with no layers.
func pushJunk(t testing.TB, f *fixture, n int) {
	t.Helper()
	for i := range n {
		f.put(t, "", f.junk(t, func(m *v1.Manifest) { m.Annotations = map[string]string{"n": fmt.Sprint(i)} }))
	}
}

// TestVerifySignedReferrerGone: a signed referrer deleted, deleted with
// another in its place, or served as other bytes fails the check, naming
// the kind and the signed digest.
func TestVerifySignedReferrerGone(t *testing.T) {
	t.Run("deleted", func(t *testing.T) {
		f := publishImage(t, image{results: passing})
		signed := f.referrers[publish.ArtifactTypeReport]
		if err := remote.Delete(f.ref.Context().Digest(signed)); err != nil {
			t.Fatal(err)
		}
		_, err := f.verify(Options{})
		if want := "the signed report referrer " + signed + " is missing"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	})
	t.Run("replaced", func(t *testing.T) {
		f := publishImage(t, image{results: passing})
		signed := f.referrers[publish.ArtifactTypeSBOM]
		if err := remote.Delete(f.ref.Context().Digest(signed)); err != nil {
			t.Fatal(err)
		}
		f.put(t, "", f.junk(t, func(m *v1.Manifest) { m.ArtifactType = publish.ArtifactTypeSBOM }))
		_, err := f.verify(Options{})
		if want := "the signed sbom referrer " + signed + " is missing"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	})
	t.Run("other bytes at its digest", func(t *testing.T) {
		// A registry that does not check what it is given, or lies.
		f := publishImage(t, image{results: passing})
		signed := f.referrers[publish.ArtifactTypeReport]
		f.put(t, signed, f.junk(t, nil))
		_, err := f.verify(Options{})
		if want := "reading the signed report referrer " + signed; err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "does not match") {
			t.Errorf("err = %v, want %q", err, want)
		}
	})
}

// TestVerifyManifestCap: a registry serving the signed referrer as a body
// of the cap is refused for its digest, one past the cap for its size.
func TestVerifyManifestCap(t *testing.T) {
	f := publishImage(t, image{results: passing})
	signed := f.referrers[publish.ArtifactTypeManifest]
	for _, tc := range []struct {
		size int
		want string
	}{
		{maxManifest, "does not match"},
		{maxManifest + 1, fmt.Sprintf("is larger than %d bytes", maxManifest)},
	} {
		f.setFront(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/manifests/"+signed) {
				w.Header().Set("Content-Type", string(types.OCIManifestSchema1))
				w.Write(bytes.Repeat([]byte(" "), tc.size))
				return
			}
			f.reg.ServeHTTP(w, r)
		}))
		_, err := f.verify(Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "the signed manifest referrer "+signed) {
			t.Errorf("%d bytes: err = %v, want %q", tc.size, err, tc.want)
		}
	}
}

// trickle answers as the registry does, but sends a GET's manifest body a
// byte every interval, until the client goes.
func trickle(reg http.Handler, interval time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet || !strings.Contains(r.URL.Path, "/manifests/") {
			reg.ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		reg.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		for _, c := range rec.Body.Bytes() {
			w.Write([]byte{c})
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(interval):
			}
		}
	})
}

// delay answers as the registry does, after wait, or not at all when the
// client goes first.
func delay(reg http.Handler, wait time.Duration) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
			return
		case <-time.After(wait):
		}
		reg.ServeHTTP(w, r)
	})
}

// TestVerifyDeadline: a registry that trickles a byte a second never
// stalls a single read, and is cut by the deadline of the whole check.
func TestVerifyDeadline(t *testing.T) {
	f := publishImage(t, image{results: passing})
	f.setFront(trickle(f.reg, time.Second))
	_, err := f.verify(Options{Timeout: 2 * time.Second})
	if err == nil || !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "the registry "+f.host+" gave no verdict within the deadline of 2s") {
		t.Fatalf("err = %v", err)
	}
	f.setFront(trickle(f.reg, 0))
	if _, err := f.verify(Options{Timeout: 2 * time.Second}); err != nil {
		t.Errorf("a registry that answers in time: %v", err)
	}
}

// TestVerifyReadTimeout: a registry whose answer does not start within
// the read timeout, or whose body brings less than MinProgress in one, is
// cut though the deadline is far; one just inside it is not.
func TestVerifyReadTimeout(t *testing.T) {
	f := publishImage(t, image{results: passing})
	// The answer inside the timeout has fifty times its delay to spare:
	// a loaded machine's scheduling must not push it over.
	for _, tc := range []struct {
		name  string
		front http.Handler
		read  time.Duration
		want  string
	}{
		{"inside the read timeout", delay(f.reg, 100*time.Millisecond), 5 * time.Second, ""},
		{"no response", delay(f.reg, time.Minute), time.Second, "registry " + f.host + ": no response to /v2/"},
		{"a trickle", trickle(f.reg, 100*time.Millisecond), time.Second, "registry " + f.host + " stalled: /v2/gpu/img/manifests/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f.setFront(tc.front)
			_, err := f.verify(Options{Timeout: time.Minute, ReadTimeout: tc.read})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("err = %v", err)
			case tc.want != "" && (err == nil || !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), tc.want) ||
				!strings.Contains(err.Error(), "read timeout of 1s")):
				t.Errorf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
