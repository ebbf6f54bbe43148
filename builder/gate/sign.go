package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/gpuhost/gpuhost/builder/version"
	"github.com/gpuhost/gpuhost/containers/provenance"
	"github.com/gpuhost/gpuhost/containers/publish"
	"github.com/gpuhost/gpuhost/containers/sign"
	"github.com/gpuhost/gpuhost/containers/vex"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/internal/userfile"
	"github.com/gpuhost/gpuhost/manifest"
	"github.com/gpuhost/gpuhost/reports"
)

// signer opens the key publish.signing names. It runs before anything is
// pushed, so a missing key or password stops the build with the registry
// untouched.
func (p *PostProcessor) signer(ctx context.Context) (sign.Signer, error) {
	s := p.config.Publish.Signing
	var password []byte
	if s.PasswordEnv != "" {
		password = []byte(os.Getenv(s.PasswordEnv))
	}
	switch {
	case s.KMSKey != "":
		open := p.KMS
		if open == nil {
			open = sign.OpenKMS
		}
		return open(ctx, s.KMSKey)
	case s.KeyFile != "":
		pem, err := userfile.Read(s.KeyFile, userfile.MaxKey)
		if err != nil {
			return nil, fmt.Errorf("publish.signing.key_file: %w", err)
		}
		sv, err := sign.LoadPrivateKey(pem, password)
		if err != nil {
			return nil, fmt.Errorf("publish.signing.key_file %s: %w", s.KeyFile, err)
		}
		return sv, nil
	case s.KeyEnv != "":
		pem := os.Getenv(s.KeyEnv)
		if pem == "" {
			return nil, fmt.Errorf("publish.signing.key_env: environment variable %s is empty", s.KeyEnv)
		}
		sv, err := sign.LoadPrivateKey([]byte(pem), password)
		if err != nil {
			return nil, fmt.Errorf("publish.signing.key_env %s: %w", s.KeyEnv, err)
		}
		return sv, nil
	}
	return nil, fmt.Errorf("publish.signing: no key")
}

// evidenceDocs are the documents pushed beside the image, which the
// provenance lists by digest.
type evidenceDocs struct {
	report, manifest, sbom []byte
	// vex is the OpenVEX document of the waived CVEs; nil when none was.
	vex *attached
}

// attached is a document attached once the image was pushed, and the
// digest of the referrer manifest that carries it, which the provenance
// signs beside the document's.
type attached struct {
	data     []byte
	referrer string
}

// vex makes the OpenVEX document of the CVE findings waivers accepted and
// attaches it to the image; nil when no CVE was waived.
func (p *PostProcessor) vex(ctx context.Context, ui packersdk.Ui, img name.Digest, rep *reports.Report, f *facts.Facts, opts []publish.Option) (*attached, error) {
	var distro facts.OS
	if f.OS != nil {
		distro = *f.OS
	}
	doc, err := vex.Document(rep, f.Vulnerabilities, distro, img, p.now())
	if err != nil || doc == nil {
		return nil, err
	}
	pushed, err := publish.Attach(ctx, img, publish.Evidence{ArtifactType: publish.ArtifactTypeVEX, Data: doc}, opts...)
	if err != nil {
		return nil, err
	}
	ui.Say(fmt.Sprintf("gpuhost-gate:   referrer %s %s (the waived CVEs)", pushed.ArtifactType, pushed.Digest))
	return &attached{data: doc, referrer: pushed.Digest}, nil
}

// signAndAttest signs the image's manifest digest and attaches its SLSA
// provenance. It runs after the image and its referrers are pushed and
// before the tag is.
func (p *PostProcessor) signAndAttest(ctx context.Context, ui packersdk.Ui, s sign.Signer, img name.Digest, res publish.Result,
	rep *reports.Report, docs evidenceDocs, ropts []remote.Option) error {
	stmt, err := p.statement(img, res, rep, docs)
	if err != nil {
		return err
	}
	sig, err := sign.Sign(ctx, s, img, ropts...)
	if err != nil {
		return err
	}
	ui.Say(fmt.Sprintf("gpuhost-gate:   signature %s@%s", sig.Tag, sig.Digest))
	att, err := sign.Attest(ctx, s, img, stmt, provenance.PredicateType, ropts...)
	if err != nil {
		return err
	}
	ui.Say(fmt.Sprintf("gpuhost-gate:   provenance %s@%s (%s)", att.Tag, att.Digest, provenance.PredicateType))
	return nil
}

// statement is the provenance of the published image.
func (p *PostProcessor) statement(img name.Digest, res publish.Result, rep *reports.Report, docs evidenceDocs) ([]byte, error) {
	cfg := p.config
	var man manifest.Manifest
	if err := json.Unmarshal(docs.manifest, &man); err != nil {
		return nil, fmt.Errorf("reading the baked manifest for the provenance: %w", err)
	}
	pins, err := json.Marshal(man.Pins)
	if err != nil {
		return nil, fmt.Errorf("encoding the pins: %w", err)
	}
	// A verifier fetches the evidence by these referrer digests alone, so
	// what anyone else attaches to the image is never read.
	referrers := map[string]string{}
	for _, r := range res.Referrers {
		referrers[r.ArtifactType] = r.Digest
	}
	for _, at := range []string{publish.ArtifactTypeReport, publish.ArtifactTypeManifest, publish.ArtifactTypeSBOM} {
		if referrers[at] == "" {
			return nil, fmt.Errorf("writing the provenance of %s: the push recorded no %s referrer", img, at)
		}
	}
	b := provenance.Build{
		Repository:  img.Context().Name(),
		ImageDigest: img.DigestStr(),
		Pins:        pins,
		Mirror:      man.Build.Mirror,
		Snapshot:    man.Build.Snapshot,
		// The gate's own version: it is the builder the provenance names.
		PluginVersion: version.PluginVersion.String(),
		Gate: provenance.Gate{Verdict: provenance.VerdictPass, PolicyDigest: rep.PolicyDigest,
			FailOn: cfg.FailOn, FailOnSkip: cfg.FailOnSkip},
		Evidence: []provenance.Evidence{
			{Name: provenance.Report, MediaType: publish.ArtifactTypeReport, Digest: digestOf(docs.report),
				Referrer: referrers[publish.ArtifactTypeReport]},
			{Name: provenance.Manifest, MediaType: publish.ArtifactTypeManifest, Digest: digestOf(docs.manifest),
				Referrer: referrers[publish.ArtifactTypeManifest]},
			{Name: provenance.SBOM, MediaType: publish.ArtifactTypeSBOM, Digest: digestOf(docs.sbom),
				Referrer: referrers[publish.ArtifactTypeSBOM]},
			{Name: provenance.Disk, Digest: res.DiskDigest},
		},
		InvocationID: cfg.PackerBuildName,
		FinishedOn:   p.now(),
	}
	if docs.vex != nil {
		b.Evidence = append(b.Evidence, provenance.Evidence{Name: provenance.VEX, MediaType: publish.ArtifactTypeVEX,
			Digest: digestOf(docs.vex.data), Referrer: docs.vex.referrer})
	}
	for _, i := range man.Pins.NGCImages {
		b.NGCImages = append(b.NGCImages, provenance.Image{Ref: i.Ref, Digest: i.Digest})
	}
	if t, err := time.Parse(time.RFC3339, man.Build.Time); err == nil {
		b.StartedOn = t
	}
	if cfg.Publish.TemplateFile != "" {
		if b.Template, err = fileDigest(cfg.Publish.TemplateFile); err != nil {
			return nil, fmt.Errorf("publish.template_file: %w", err)
		}
	}
	if cfg.Publish.LockFile != "" {
		if b.LockFile, err = fileDigest(cfg.Publish.LockFile); err != nil {
			return nil, fmt.Errorf("publish.lock_file: %w", err)
		}
	}
	return provenance.Statement(b)
}

func (p *PostProcessor) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

func digestOf(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// fileDigest streams a file through sha256: a lock file of a large image
// need not fit a read limit.
func fileDigest(path string) (*provenance.File, error) {
	f, err := userfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return nil, fmt.Errorf("hashing %s: %w", path, err)
	}
	return &provenance.File{Path: path, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}
