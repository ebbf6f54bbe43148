package gate

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/hashicorp/hcl/v2/hcldec"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/gpuhost/gpuhost/builder/internal/evaluation"
	"github.com/gpuhost/gpuhost/containers/publish"
	"github.com/gpuhost/gpuhost/containers/sign"
	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/packages"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/manifest"
	"github.com/gpuhost/gpuhost/render/report"
	"github.com/gpuhost/gpuhost/reports"
	"github.com/gpuhost/gpuhost/scan"
	"github.com/gpuhost/gpuhost/target"
	"github.com/gpuhost/gpuhost/target/collector"
	"github.com/gpuhost/gpuhost/target/diskimage"
)

// BuilderID is the BuilderId of the gate's artifact.
const BuilderID = "gpuhost.gate"

// SBOMFunc returns a CycloneDX JSON SBOM of a rootfs directory.
type SBOMFunc func(ctx context.Context, rootfs string) ([]byte, error)

// PostProcessor is the Packer post-processor "gpuhost-gate".
type PostProcessor struct {
	config  Config
	scanner *scan.Scanner
	// SBOM makes the SBOM that is published with the image. Publishing
	// fails when it is nil: an image is never pushed without its SBOM.
	SBOM SBOMFunc
	// Vulnerabilities makes the collector that matches packages against
	// the trivy DB in trivy_db. A configuration naming trivy_db is refused
	// when it is nil.
	Vulnerabilities func(dbDir string) collector.Collector
	// Now is the clock for the default tag and the provenance; time.Now
	// when nil.
	Now func() time.Time
	// KMS opens publish.signing.kms_key; sign.OpenKMS (sigstore's
	// providers and plugins) when nil.
	KMS sign.KMS
}

var _ packersdk.PostProcessor = (*PostProcessor)(nil)

// ConfigSpec returns the HCL2 spec of Config.
func (p *PostProcessor) ConfigSpec() hcldec.ObjectSpec { return p.config.FlatMapstructure().HCL2Spec() }

// Configure decodes and validates the configuration; every problem is
// listed. It also loads and compiles the policy pack, parameters and
// waivers, so that `packer validate` finds a broken policy before a bake.
func (p *PostProcessor) Configure(raws ...interface{}) error {
	c, err := Decode(raws...)
	if err != nil {
		return err
	}
	if c.TrivyDB != "" && p.Vulnerabilities == nil {
		return errors.New("gpuhost-gate: trivy_db is set, but this build of the plugin has no vulnerability matching")
	}
	sc, err := c.Scanner(context.Background())
	if err != nil {
		return fmt.Errorf("gpuhost-gate: %w", err)
	}
	p.config, p.scanner = *c, sc
	return nil
}

// artifact is what the gate scans: a disk image, or a rootfs directory, or
// both (a disk image whose rootfs the builder kept).
type artifact struct {
	disk   string
	rootfs string
	// encrypted says the disk's root is a LUKS volume (the rootfs
	// builder's encryption): its files are read from rootfs.
	encrypted bool
}

// findTarget picks the disk image among the artifact's files, and the
// rootfs directory from its state.
func findTarget(a packersdk.Artifact) (artifact, error) {
	var t artifact
	for _, f := range a.Files() {
		if _, err := publish.LayerMediaType(f); err == nil {
			t.disk = f
			break
		}
	}
	if dir, ok := a.State("rootfs").(string); ok && dir != "" {
		if info, err := os.Stat(dir); err == nil && info.IsDir() {
			t.rootfs = dir
		}
	}
	t.encrypted, _ = a.State("luks2").(bool)
	if t.encrypted && (t.disk == "" || t.rootfs == "") {
		return t, fmt.Errorf("gpuhost-gate: artifact %q has an encrypted root, which is judged from its disk and its rootfs directory together; keep both (the rootfs builder's remove_rootfs = false)", a.Id())
	}
	if t.disk == "" && t.rootfs == "" {
		return t, fmt.Errorf("gpuhost-gate: artifact %q (builder %s) has no .qcow2, .raw or .img file and no rootfs directory to scan",
			a.Id(), a.BuilderId())
	}
	return t, nil
}

// base is the path the reports are named after.
func (t artifact) base() string {
	if t.disk != "" {
		return t.disk
	}
	return filepath.Clean(t.rootfs)
}

// PostProcess scans the artifact, writes the reports beside it, and fails
// the build when the gate does not pass; on a pass it publishes when
// publish.repository is set. The input artifact is always kept: the gate
// only reads it.
func (p *PostProcessor) PostProcess(ctx context.Context, ui packersdk.Ui, a packersdk.Artifact) (packersdk.Artifact, bool, bool, error) {
	cfg := p.config
	t, err := findTarget(a)
	if err != nil {
		return nil, true, true, err
	}
	// Refuse before scanning what could not be published anyway.
	if cfg.Publish.Repository != "" {
		if err := p.canPublish(t); err != nil {
			return nil, true, true, err
		}
	}
	sc := p.scanner
	if sc == nil {
		return nil, true, true, errors.New("gpuhost-gate: not configured")
	}
	ui.Say("gpuhost-gate: scanning " + t.base())
	f, err := collect(ctx, t, p.collectOptions())
	if err != nil {
		return nil, true, true, fmt.Errorf("gpuhost-gate: scanning %s: %w", t.base(), err)
	}
	rep, err := sc.Facts(ctx, f)
	if err != nil {
		return nil, true, true, fmt.Errorf("gpuhost-gate: %w", err)
	}
	relateToTemplate(rep, cfg.Publish.TemplateFile)
	out := &Artifact{source: a}
	out.reports, err = cfg.WriteReports(t.base(), "gate", rep)
	if err != nil {
		return nil, true, true, fmt.Errorf("gpuhost-gate: %w", err)
	}
	th := cfg.Thresholds()
	evaluation.Say(ui, "gpuhost-gate", rep, th)
	ui.Say("gpuhost-gate: reports: " + strings.Join(out.reports, ", "))
	if err := evaluation.Verdict(rep, th); err != nil {
		return nil, true, true, fmt.Errorf("gpuhost-gate: %s %w; nothing published", t.base(), err)
	}
	if cfg.Publish.Repository == "" {
		return out, true, true, nil
	}
	res, err := p.publish(ctx, ui, t, rep, f)
	if err != nil {
		return nil, true, true, fmt.Errorf("gpuhost-gate: %w", err)
	}
	out.published = &res
	return out, true, true, nil
}

// canPublish checks that the artifact carries all that a push needs.
func (p *PostProcessor) canPublish(t artifact) error {
	if t.disk == "" {
		return fmt.Errorf("gpuhost-gate: publish.repository is set, but the artifact has no disk image to push (use output_format raw, qcow2 or disk)")
	}
	return nil
}

// collect gathers the facts: from the disk image when there is one (it is
// what ships), else from the rootfs directory. An encrypted root is read
// from the rootfs directory, its encryption from the disk.
func collect(ctx context.Context, t artifact, o target.Options) (*facts.Facts, error) {
	if t.encrypted {
		o.ImageRootfs = t.rootfs
	}
	if t.disk != "" {
		return target.Image(ctx, t.disk, o)
	}
	return target.Rootfs(ctx, t.rootfs, o)
}

// collectOptions adds the vulnerability collector when trivy_db is set.
func (p *PostProcessor) collectOptions() target.Options {
	if p.config.TrivyDB == "" {
		return target.Options{}
	}
	return target.Options{Collectors: append(target.All(), p.Vulnerabilities(p.config.TrivyDB))}
}

// publish pushes the disk image with its three referrers: the report, the
// baked manifest and the SBOM, each required; then, before the tag, the
// signature of the image's manifest digest and its signed provenance,
// which lists the three by digest.
func (p *PostProcessor) publish(ctx context.Context, ui packersdk.Ui, t artifact, rep *reports.Report, f *facts.Facts) (publish.Result, error) {
	cfg := p.config.Publish
	var opts []publish.Option
	if cfg.UsernameEnv != "" {
		user, pass := os.Getenv(cfg.UsernameEnv), os.Getenv(cfg.PasswordEnv)
		if user == "" || pass == "" {
			return publish.Result{}, fmt.Errorf("publish: environment variables %s and %s must both be set", cfg.UsernameEnv, cfg.PasswordEnv)
		}
		opts = append(opts, publish.WithBasicAuth(user, pass))
	}
	opts = append(opts, publish.WithInsecure(cfg.Insecure))

	report, err := reportJSON(rep)
	if err != nil {
		return publish.Result{}, err
	}
	man, err := readFromTarget(t, manifest.Path)
	if err != nil {
		return publish.Result{}, err
	}
	if man == nil {
		return publish.Result{}, fmt.Errorf("publish: %s has no %s (the gpuhost-gpu provisioner writes it); nothing is pushed without it", t.base(), manifest.Path)
	}
	sbom, err := p.sbom(ctx, ui, t)
	if err != nil {
		return publish.Result{}, err
	}
	signer, err := p.signer(ctx)
	if err != nil {
		return publish.Result{}, err
	}
	tag := cfg.Tag
	if tag == "" {
		tag = defaultTag(t.disk, p.now())
	}
	ref := cfg.Repository + ":" + tag
	_, ropts := publish.Remote(ctx, opts...)
	docs := evidenceDocs{report: report, manifest: man, sbom: sbom}
	attachOpts := slices.Clone(opts)
	opts = append(opts, publish.WithBeforeTag(func(ctx context.Context, img name.Digest, res publish.Result) error {
		// The VEX document names the image by digest, so it is made and
		// attached here, before the provenance that lists it.
		vexDoc, err := p.vex(ctx, ui, img, rep, f, attachOpts)
		if err != nil {
			return err
		}
		docs.vex = vexDoc
		return p.signAndAttest(ctx, ui, signer, img, res, rep, docs, ropts)
	}))
	ui.Say("gpuhost-gate: pushing " + t.disk + " to " + ref)
	res, err := publish.New(opts...).Push(ctx, ref, t.disk, []publish.Evidence{
		{ArtifactType: publish.ArtifactTypeReport, Data: report, Annotations: map[string]string{
			"dev.gpuhost.report.policy-digest": rep.PolicyDigest,
			"dev.gpuhost.report.facts-digest":  rep.FactsDigest,
		}},
		{ArtifactType: publish.ArtifactTypeManifest, Data: man},
		{ArtifactType: publish.ArtifactTypeSBOM, Data: sbom},
	})
	if err != nil {
		return res, err
	}
	ui.Say(fmt.Sprintf("gpuhost-gate: pushed %s@%s", cfg.Repository, res.Image.Digest))
	for _, r := range res.Referrers {
		ui.Say(fmt.Sprintf("gpuhost-gate:   referrer %s %s", r.ArtifactType, r.Digest))
	}
	return res, nil
}

// reportJSON renders the report as the json renderer writes it.
func reportJSON(rep *reports.Report) ([]byte, error) {
	r, err := report.Lookup("json")
	if err != nil {
		return nil, err
	}
	var b strings.Builder
	if err := r.Render(&b, rep); err != nil {
		return nil, fmt.Errorf("rendering the report: %w", err)
	}
	return []byte(b.String()), nil
}

// maxEvidence bounds the manifest and the SBOM read from the image: a full
// package inventory is a few MB, so this only stops a hostile file.
const maxEvidence = 64 << 20

// sbom is the SBOM the image carries (the provisioner writes it at bake
// time, so the evidence matches what ships); an image without one gets one
// made from its rootfs directory.
func (p *PostProcessor) sbom(ctx context.Context, ui packersdk.Ui, t artifact) ([]byte, error) {
	data, err := readFromTarget(t, packages.SBOMPath)
	if err != nil {
		return nil, err
	}
	if data != nil {
		ui.Say("gpuhost-gate: attaching the SBOM the image carries at " + packages.SBOMPath)
		return data, nil
	}
	if p.SBOM == nil {
		return nil, fmt.Errorf("publish: %s carries no %s and this build of the plugin has no SBOM generator; nothing is pushed without an SBOM", t.base(), packages.SBOMPath)
	}
	if t.rootfs == "" {
		return nil, fmt.Errorf("publish: %s carries no %s and its rootfs directory is gone, so no SBOM can be made; keep it (the rootfs builder's remove_rootfs = false)", t.base(), packages.SBOMPath)
	}
	ui.Say("gpuhost-gate: making the SBOM of " + t.rootfs)
	data, err = p.SBOM(ctx, t.rootfs)
	if err != nil {
		return nil, fmt.Errorf("making the SBOM of %s: %w", t.rootfs, err)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("making the SBOM of %s: empty", t.rootfs)
	}
	return data, nil
}

// readFromTarget reads one file from the disk image when there is one (it is
// what ships), else from the rootfs, never following a link out of either.
// An encrypted root cannot be read from its disk: its files come from the
// rootfs it was made from, as the scan's did. A file that is not there is
// (nil, nil).
func readFromTarget(t artifact, name string) ([]byte, error) {
	var fsys sysroot.FS
	if t.disk != "" && !t.encrypted {
		img, err := diskimage.Open(t.disk)
		if err != nil {
			return nil, err
		}
		defer img.Close()
		fsys = img.FS()
	} else {
		root, closer, err := sysroot.Open(t.rootfs)
		if err != nil {
			return nil, err
		}
		defer closer.Close()
		fsys = root
	}
	data, err := fsys.ReadFileLimit(name, maxEvidence)
	if sysroot.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", fsys.Display(name), err)
	}
	return data, nil
}

// defaultTag is the disk's file name without its extension, a dash and the
// time in UTC, cut to an OCI tag's length and alphabet.
func defaultTag(disk string, now time.Time) string {
	base := strings.TrimSuffix(filepath.Base(disk), filepath.Ext(disk))
	var b strings.Builder
	for _, r := range base {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	name := strings.TrimLeft(b.String(), ".-")
	stamp := now.UTC().Format("20060102T150405Z")
	if len(name) > 127-len(stamp)-1 {
		name = name[:127-len(stamp)-1]
	}
	if name == "" {
		return "image-" + stamp
	}
	return name + "-" + stamp
}
