// Package verify checks a published disk image for a pre-deploy gate
// without pulling the disk: the signature on its manifest digest, the SLSA
// provenance the gate signed, and the evidence referrers (report, baked
// manifest, SBOM) the provenance names by digest; then whether the report
// still passes the caller's policy: its threshold, its policy digest, its
// age.
//
// Only what is signed is read. The provenance names each evidence referrer
// manifest by digest, and verify fetches those by digest: the image's list
// of referrers, to which anyone with push rights can add, is never read,
// so no number or shape of other referrers changes the verdict. Every
// registry read is held to a read timeout and a size, and the whole check
// to a deadline.
//
// Two outcomes are kept apart. An error means the image cannot be trusted
// at all: a bad reference, no signature or a bad one, provenance about
// another image, evidence missing or not what was signed. A Result with
// Problems means everything is authentic but the caller's policy refuses
// it: the report fails at fail_on, was made with another policy pack, or is
// too old.
package verify

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/gpuhost/gpuhost/containers/provenance"
	"github.com/gpuhost/gpuhost/containers/publish"
	"github.com/gpuhost/gpuhost/containers/sign"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/manifest"
	"github.com/gpuhost/gpuhost/render/diff"
	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan"
)

// maxEvidence bounds one evidence document read back, as publish does.
const maxEvidence = 64 << 20

// maxManifest bounds a referrer or image manifest.
const maxManifest = 1 << 20

// Options says what to check against.
type Options struct {
	// Key verifies the signature and the provenance. Required.
	Key sign.Verifier
	// PolicyDigest is the policy pack digest the report must have been
	// made with; empty takes the one the provenance records.
	PolicyDigest string
	// MaxAge is how old the report may be; 0 is no limit.
	MaxAge time.Duration
	// FailOn is the severity at or above which a failed check refuses
	// the image; "high" when empty.
	FailOn string
	// Now is the clock for MaxAge; time.Now when nil.
	Now func() time.Time
	// Registry are the publish options for the registry: credentials,
	// insecure. A transport among them is replaced: set Transport.
	Registry []publish.Option
	// Transport carries the registry requests, each held to ReadTimeout;
	// nil is a clone of http.DefaultTransport.
	Transport http.RoundTripper
	// Timeout bounds the whole verification; DefaultTimeout when 0.
	Timeout time.Duration
	// ReadTimeout bounds each registry read (see DefaultReadTimeout);
	// DefaultReadTimeout when 0.
	ReadTimeout time.Duration
}

// Result is an image whose signature, provenance and evidence checked out.
type Result struct {
	// Image is the reference verified, registry/repository@digest.
	Image string
	// Provenance is the signed provenance used.
	Provenance *provenance.Provenance
	// Report is the gate's report.
	Report *reports.Report
	// Evidence maps each byproduct name to the referrer manifest it was
	// read from.
	Evidence map[string]string
	// Problems say why the caller's policy refuses the image; empty means
	// it is accepted.
	Problems []string
}

// Verify checks the image at ref, which must be pinned by digest.
func Verify(ctx context.Context, ref string, o Options) (*Result, error) {
	if o.Key == nil {
		return nil, errors.New("verifying: no key")
	}
	failOn := o.FailOn
	if failOn == "" {
		failOn = "high"
	}
	if !reports.ValidSeverity(failOn) {
		return nil, fmt.Errorf("verifying: fail-on %q is not a severity", failOn)
	}
	if o.Timeout < 0 || o.ReadTimeout < 0 {
		return nil, fmt.Errorf("verifying: negative timeout (%s, read timeout %s)", o.Timeout, o.ReadTimeout)
	}
	nameOpts, _ := publish.Remote(ctx, o.Registry...)
	d, err := name.NewDigest(ref, append(nameOpts, name.StrictValidation)...)
	if err != nil {
		return nil, fmt.Errorf("verifying %q: not registry/repository@sha256:<hex> (a tag can move; pin the digest): %w", ref, err)
	}
	timeout, readTimeout := cmp.Or(o.Timeout, DefaultTimeout), cmp.Or(o.ReadTimeout, DefaultReadTimeout)
	// The cause tells Verify's own deadline from the caller's context
	// ending, and reads as the error where a read passes it on.
	deadline := fmt.Errorf("the registry %s gave no verdict within the deadline of %s: %w", d.RegistryStr(), timeout, ErrTimeout)
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, deadline)
	defer cancel()
	tr := newTransport(o.Transport, readTimeout)
	defer tr.release()
	regOpts := append(slices.Clone(o.Registry), publish.WithTransport(tr))
	_, remoteOpts := publish.Remote(ctx, regOpts...)
	res, err := verify(ctx, d, o, failOn, remoteOpts)
	if err != nil && errors.Is(context.Cause(ctx), deadline) && !errors.Is(err, deadline) {
		return nil, fmt.Errorf("verifying %s: %w (%w)", d, deadline, err)
	}
	return res, err
}

func verify(ctx context.Context, d name.Digest, o Options, failOn string, remoteOpts []remote.Option) (*Result, error) {
	disk, err := diskLayer(d, remoteOpts)
	if err != nil {
		return nil, err
	}
	if err := sign.VerifySignature(ctx, o.Key, d, remoteOpts...); err != nil {
		return nil, err
	}
	prov, err := signedProvenance(ctx, o.Key, d, remoteOpts)
	if err != nil {
		return nil, err
	}
	if want, ok := prov.Evidence[provenance.Disk]; ok && want.Digest != disk {
		return nil, fmt.Errorf("verifying %s: the disk layer is %s, the provenance says %s", d, disk, want.Digest)
	}
	res := &Result{Image: d.String(), Provenance: prov, Evidence: map[string]string{}}
	docs, err := evidence(d, prov, remoteOpts, res.Evidence)
	if err != nil {
		return nil, err
	}
	rep, err := diff.Parse(docs[provenance.Report], "the published report")
	if err != nil {
		return nil, fmt.Errorf("verifying %s: %w", d, err)
	}
	res.Report = rep
	if err := checkManifest(docs[provenance.Manifest]); err != nil {
		return nil, fmt.Errorf("verifying %s: %w", d, err)
	}
	if rep.PolicyDigest != prov.Gate.PolicyDigest {
		return nil, fmt.Errorf("verifying %s: the report's policy digest %s is not the provenance's %s", d, rep.PolicyDigest, prov.Gate.PolicyDigest)
	}
	rep.Summarize()
	if scan.ExitCode([]*reports.Report{rep}, scan.Thresholds{FailOn: failOn}) == scan.ExitUntrusted {
		return nil, fmt.Errorf("verifying %s: the report has errored checks: its verdict cannot be trusted", d)
	}

	if o.PolicyDigest != "" && rep.PolicyDigest != o.PolicyDigest {
		res.Problems = append(res.Problems, fmt.Sprintf("the report was made with policy %s, not %s", rep.PolicyDigest, o.PolicyDigest))
	}
	if rep.Failed(failOn) {
		var ids []string
		for _, r := range rep.Results {
			if r.FailsAt(failOn) {
				ids = append(ids, r.ID+" ("+r.Severity+")")
			}
		}
		res.Problems = append(res.Problems, fmt.Sprintf("the report fails at %s: %v", failOn, ids))
	}
	if o.MaxAge > 0 {
		scanned, err := time.Parse(time.RFC3339, rep.Target.ScannedAt)
		if err != nil {
			return nil, fmt.Errorf("verifying %s: the report's scanned_at %q: %w", d, rep.Target.ScannedAt, err)
		}
		now := time.Now
		if o.Now != nil {
			now = o.Now
		}
		if age := now().Sub(scanned); age > o.MaxAge {
			res.Problems = append(res.Problems, fmt.Sprintf("the report is %s old (scanned %s), more than %s", age.Round(time.Minute), rep.Target.ScannedAt, o.MaxAge))
		}
	}
	return res, nil
}

// diskLayer reads the image manifest (never its layer) and returns the
// disk layer's digest.
func diskLayer(d name.Digest, opts []remote.Option) (string, error) {
	desc, err := remote.Get(d, opts...)
	if err != nil {
		return "", fmt.Errorf("verifying %s: %w", d, err)
	}
	if len(desc.Manifest) > maxManifest {
		return "", fmt.Errorf("verifying %s: the manifest is larger than %d bytes", d, maxManifest)
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return "", fmt.Errorf("verifying %s: %w", d, err)
	}
	if m.ArtifactType != publish.ArtifactTypeDiskImage || len(m.Layers) != 1 {
		return "", fmt.Errorf("verifying %s: not a gpuhost disk image (artifactType %q, %d layers)", d, m.ArtifactType, len(m.Layers))
	}
	return m.Layers[0].Digest.String(), nil
}

// signedProvenance is the most recent provenance statement about d that
// the key signed and the gate wrote with a pass.
func signedProvenance(ctx context.Context, key sign.Verifier, d name.Digest, opts []remote.Option) (*provenance.Provenance, error) {
	payloads, err := sign.VerifyAttestations(ctx, key, d, provenance.PredicateType, opts...)
	if err != nil {
		return nil, err
	}
	var best *provenance.Provenance
	var errs []error
	for _, p := range payloads {
		prov, err := provenance.Parse(p)
		if err == nil {
			err = prov.About(d.DigestStr())
		}
		if err == nil && prov.BuilderID != provenance.BuilderID {
			err = fmt.Errorf("built by %q, not the gpuhost gate", prov.BuilderID)
		}
		if err == nil && prov.Gate.Verdict != provenance.VerdictPass {
			err = fmt.Errorf("the gate's verdict is %q", prov.Gate.Verdict)
		}
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if best == nil || prov.FinishedOn.After(best.FinishedOn) {
			best = prov
		}
	}
	if best == nil {
		return nil, fmt.Errorf("verifying the provenance of %s: %w", d, errors.Join(errs...))
	}
	return best, nil
}

// evidenceType is a referrer a published image carries, by the byproduct
// name the provenance lists it under. An optional one is required only
// when the provenance lists it: the VEX document exists only when waivers
// accepted CVEs.
type evidenceType struct {
	name, artifactType string
	optional           bool
}

var evidenceTypes = []evidenceType{
	{provenance.Report, publish.ArtifactTypeReport, false},
	{provenance.Manifest, publish.ArtifactTypeManifest, false},
	{provenance.SBOM, publish.ArtifactTypeSBOM, false},
	{provenance.VEX, publish.ArtifactTypeVEX, true},
}

// evidence reads, for each evidence type, the referrer manifest at the
// digest the provenance signed and the document it carries, recording the
// referrer in found. It lists no referrers: one the provenance does not
// name is never read, and a signed one that is gone is missing, whatever
// stands in its place.
func evidence(d name.Digest, prov *provenance.Provenance, opts []remote.Option, found map[string]string) (map[string][]byte, error) {
	docs := map[string][]byte{}
	for _, et := range evidenceTypes {
		want, ok := prov.Evidence[et.name]
		if !ok && et.optional {
			continue
		}
		if !ok {
			return nil, fmt.Errorf("verifying %s: the provenance lists no %s", d, et.name)
		}
		if want.Referrer == "" {
			return nil, fmt.Errorf("verifying %s: the provenance lists the %s %s but not the referrer manifest that carries it (a gate older than this verifier signed it): publish the image again", d, et.name, want.Digest)
		}
		data, err := signedReferrer(d, et, want, opts)
		if err != nil {
			return nil, fmt.Errorf("verifying %s: %w", d, err)
		}
		docs[et.name], found[et.name] = data, want.Referrer
	}
	return docs, nil
}

// signedReferrer reads the referrer manifest want names, checks that it is
// the evidence of d the provenance says, and reads its document. The
// registry client checks both digests as it reads.
func signedReferrer(d name.Digest, et evidenceType, want provenance.Evidence, opts []remote.Option) ([]byte, error) {
	desc, err := remote.Get(d.Context().Digest(want.Referrer), opts...)
	if isNotFound(err) {
		return nil, fmt.Errorf("the signed %s referrer %s is missing", et.name, want.Referrer)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the signed %s referrer %s: %w", et.name, want.Referrer, err)
	}
	if len(desc.Manifest) > maxManifest {
		return nil, fmt.Errorf("the signed %s referrer %s is larger than %d bytes", et.name, want.Referrer, maxManifest)
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return nil, fmt.Errorf("reading the signed %s referrer %s: %w", et.name, want.Referrer, err)
	}
	switch {
	case m.Subject == nil || m.Subject.Digest.String() != d.DigestStr():
		return nil, fmt.Errorf("the signed %s referrer %s does not refer to %s", et.name, want.Referrer, d.DigestStr())
	case m.ArtifactType != et.artifactType:
		return nil, fmt.Errorf("the signed %s referrer %s has artifactType %q, want %q", et.name, want.Referrer, m.ArtifactType, et.artifactType)
	case len(m.Layers) != 1 || m.Layers[0].Digest.String() != want.Digest:
		return nil, fmt.Errorf("the signed %s referrer %s does not hold the signed document %s alone", et.name, want.Referrer, want.Digest)
	}
	data, err := readBlob(d.Context(), m.Layers[0], opts)
	if isNotFound(err) {
		return nil, fmt.Errorf("the signed %s document %s (referrer %s) is missing", et.name, want.Digest, want.Referrer)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the signed %s referrer %s: %w", et.name, want.Referrer, err)
	}
	return data, nil
}

func isNotFound(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && te.StatusCode == http.StatusNotFound
}

// readBlob reads one blob, bounded, to the end, where the registry
// client checks its digest.
func readBlob(repo name.Repository, desc v1.Descriptor, opts []remote.Option) ([]byte, error) {
	if desc.Size > maxEvidence {
		return nil, fmt.Errorf("layer %s is %d bytes, more than %d", desc.Digest, desc.Size, maxEvidence)
	}
	l, err := remote.Layer(repo.Digest(desc.Digest.String()), opts...)
	if err != nil {
		return nil, err
	}
	rc, err := l.Compressed()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	data, err := sysroot.ReadAllLimit(rc, maxEvidence, "layer "+desc.Digest.String())
	if errors.Is(err, sysroot.ErrTooLarge) {
		return nil, fmt.Errorf("layer %s is more than %d bytes, the manifest says %d", desc.Digest, maxEvidence, desc.Size)
	}
	if err != nil {
		return nil, fmt.Errorf("reading layer %s: %w", desc.Digest, err)
	}
	if int64(len(data)) != desc.Size {
		return nil, fmt.Errorf("layer %s is %d bytes, the manifest says %d", desc.Digest, len(data), desc.Size)
	}
	return data, nil
}

// checkManifest checks the published baked manifest is one.
func checkManifest(data []byte) error {
	if _, err := manifest.Decode(data); err != nil {
		return fmt.Errorf("parsing the published manifest: %w", err)
	}
	return nil
}
