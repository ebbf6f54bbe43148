// Package provenance writes and reads the SLSA v1 provenance the gate signs
// for a published disk image: an in-toto v1 statement (in-toto's own
// attestation types, which in-toto-golang's statement structs now defer
// to) whose subject is the image's manifest digest.
//
// What it records: the builder (the gate, at its plugin version), the
// template and lock file by path and digest, the pins and the package
// source (mirror or snapshot) from the baked manifest, the policy pack's
// digest and the gate's thresholds, and the gate's verdict. The evidence
// pushed beside the image (the report, the baked manifest, the SBOM) is
// listed among the byproducts by digest, each with the digest of the
// referrer manifest that carries it (the ReferrerAnnotation): signing the
// provenance signs them, so the baked manifest needs no signature of its
// own, and a verifier fetches exactly the referrers signed, by digest,
// whatever else anyone with push rights attached to the image.
package provenance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	slsa "github.com/in-toto/attestation/go/predicates/provenance/v1"
	ita1 "github.com/in-toto/attestation/go/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

const (
	// PredicateType is SLSA provenance v1, what `cosign verify-attestation
	// --type slsaprovenance1` asks for.
	PredicateType = "https://slsa.dev/provenance/v1"
	// BuildType says how to read ExternalParameters.
	BuildType = "https://github.com/gpuhost/gpuhost/gate/v1"
	// BuilderID names the gpuhost-gate post-processor as the builder.
	BuilderID = "https://github.com/gpuhost/gpuhost/builder/gate"
)

// Names of the byproducts: the evidence published beside the image.
const (
	Report   = "report"
	Manifest = "manifest"
	SBOM     = "sbom"
	Disk     = "disk"
	// VEX is listed only when waivers accepted CVEs.
	VEX = "vex"
)

// ReferrerAnnotation is the byproduct annotation holding the digest of
// the referrer manifest that carries the document, "sha256:<hex>". The
// byproduct's own digest is the document's; the manifest's digest is what
// a registry serves it by, so it is signed too.
const ReferrerAnnotation = "dev.gpuhost.referrer"

// VerdictPass is the only verdict the gate publishes with.
const VerdictPass = "pass"

// maxStatement bounds a statement read back.
const maxStatement = 4 << 20

// File is a file by path and sha256 digest.
type File struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// Image is a container image the build pre-seeded, by reference and digest.
type Image struct {
	Ref    string `json:"ref"`
	Digest string `json:"digest"`
}

// Evidence is one published document, by digest.
type Evidence struct {
	// Name is Report, Manifest, SBOM or Disk.
	Name string
	// MediaType is its artifact or layer media type.
	MediaType string
	// Digest is "sha256:<hex>".
	Digest string
	// Referrer is the digest of the referrer manifest that carries the
	// document, "sha256:<hex>"; empty for the disk, the image's own layer.
	Referrer string
}

// Gate is what the gate decided and with which policy.
type Gate struct {
	// Verdict is VerdictPass.
	Verdict string `json:"verdict"`
	// PolicyDigest is the report's policy_digest.
	PolicyDigest string `json:"policy_digest"`
	// FailOn and FailOnSkip are the gate's thresholds.
	FailOn     string `json:"fail_on"`
	FailOnSkip string `json:"fail_on_skip,omitempty"`
}

// Build is what the statement is made from.
type Build struct {
	// Repository is the subject's name: registry/repository.
	Repository string
	// ImageDigest is the subject: the disk image's manifest digest.
	ImageDigest string
	// Template is the Packer template, when the gate was told it.
	Template *File
	// LockFile is the lock file the build installed from, when there is one.
	LockFile *File
	// Pins are the baked manifest's pins, as JSON.
	Pins json.RawMessage
	// Mirror and Snapshot are where the packages came from.
	Mirror, Snapshot string
	// NGCImages are the pre-seeded container bases.
	NGCImages []Image
	// PluginVersion is the gate's version.
	PluginVersion string
	// Gate is the verdict and its policy.
	Gate Gate
	// Evidence are the documents published beside the image.
	Evidence []Evidence
	// InvocationID names the build (Packer's build name), when known.
	InvocationID string
	// StartedOn is when the image was built (the manifest's time);
	// FinishedOn when the gate passed it.
	StartedOn, FinishedOn time.Time
}

// externalParameters is ExternalParameters' JSON: what the build was asked
// to make.
type externalParameters struct {
	Template *File          `json:"template,omitempty"`
	LockFile *File          `json:"lock_file,omitempty"`
	Source   source         `json:"source"`
	Pins     map[string]any `json:"pins,omitempty"`
	Gate     Gate           `json:"gate"`
}

type source struct {
	Mirror   string `json:"mirror,omitempty"`
	Snapshot string `json:"snapshot,omitempty"`
}

// Statement encodes b as the JSON of an in-toto v1 statement with a SLSA v1
// provenance predicate.
func Statement(b Build) ([]byte, error) {
	subject, err := descriptor(b.Repository, b.ImageDigest)
	if err != nil {
		return nil, fmt.Errorf("writing provenance: subject: %w", err)
	}
	extStruct, err := externalParametersOf(b)
	if err != nil {
		return nil, err
	}
	deps, err := resolvedDependencies(b)
	if err != nil {
		return nil, err
	}
	byproducts, err := byproductsOf(b)
	if err != nil {
		return nil, err
	}
	pred := &slsa.Provenance{
		BuildDefinition: &slsa.BuildDefinition{
			BuildType:            BuildType,
			ExternalParameters:   extStruct,
			ResolvedDependencies: deps,
		},
		RunDetails: &slsa.RunDetails{
			Builder:    &slsa.Builder{Id: BuilderID, Version: map[string]string{"gpuhost": b.PluginVersion}},
			Metadata:   buildMetadata(b),
			Byproducts: byproducts,
		},
	}
	if err := pred.Validate(); err != nil {
		return nil, fmt.Errorf("writing provenance: %w", err)
	}
	predStruct, err := protoToStruct(pred)
	if err != nil {
		return nil, fmt.Errorf("writing provenance: %w", err)
	}
	st := &ita1.Statement{
		Type:          ita1.StatementTypeUri,
		Subject:       []*ita1.ResourceDescriptor{subject},
		PredicateType: PredicateType,
		Predicate:     predStruct,
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("writing provenance: %w", err)
	}
	out, err := protojson.Marshal(st)
	if err != nil {
		return nil, fmt.Errorf("writing provenance: %w", err)
	}
	// protojson varies its whitespace on purpose; compact it so that the
	// same build signs the same bytes.
	var buf bytes.Buffer
	if err := json.Compact(&buf, out); err != nil {
		return nil, fmt.Errorf("writing provenance: %w", err)
	}
	return buf.Bytes(), nil
}

// externalParametersOf says what the build was asked to make. The pins are
// decoded rather than embedded as raw JSON, since the predicate holds them
// as a structured value, not a string.
func externalParametersOf(b Build) (*structpb.Struct, error) {
	ext := externalParameters{Template: b.Template, LockFile: b.LockFile,
		Source: source{Mirror: b.Mirror, Snapshot: b.Snapshot}, Gate: b.Gate}
	if len(b.Pins) > 0 {
		if err := json.Unmarshal(b.Pins, &ext.Pins); err != nil {
			return nil, fmt.Errorf("writing provenance: pins: %w", err)
		}
	}
	extStruct, err := toStruct(ext)
	if err != nil {
		return nil, fmt.Errorf("writing provenance: external parameters: %w", err)
	}
	return extStruct, nil
}

// resolvedDependencies names every input the image was built from, each by
// digest where it has one, so a verifier can tell which template, lock,
// policy and base images made it; the mirror and snapshot have only a URI.
func resolvedDependencies(b Build) ([]*ita1.ResourceDescriptor, error) {
	var deps []*ita1.ResourceDescriptor
	for _, f := range []*File{b.Template, b.LockFile} {
		if f != nil {
			deps = append(deps, &ita1.ResourceDescriptor{Name: f.Path, Digest: map[string]string{"sha256": f.SHA256}})
		}
	}
	if b.Gate.PolicyDigest != "" {
		d, err := descriptor("policy-pack", b.Gate.PolicyDigest)
		if err != nil {
			return nil, fmt.Errorf("writing provenance: policy digest: %w", err)
		}
		deps = append(deps, d)
	}
	for _, img := range b.NGCImages {
		d, err := descriptor(img.Ref, img.Digest)
		if err != nil {
			return nil, fmt.Errorf("writing provenance: image %s: %w", img.Ref, err)
		}
		deps = append(deps, d)
	}
	for _, u := range []string{b.Mirror, b.Snapshot} {
		if u != "" {
			deps = append(deps, &ita1.ResourceDescriptor{Uri: u})
		}
	}
	return deps, nil
}

// byproductsOf lists the evidence published beside the image by digest,
// each with the digest of the referrer manifest that carries it, so that
// signing the provenance signs the evidence too and a verifier fetches
// exactly the referrers signed.
func byproductsOf(b Build) ([]*ita1.ResourceDescriptor, error) {
	var byproducts []*ita1.ResourceDescriptor
	for _, e := range b.Evidence {
		d, err := descriptor(e.Name, e.Digest)
		if err != nil {
			return nil, fmt.Errorf("writing provenance: %s: %w", e.Name, err)
		}
		d.MediaType = e.MediaType
		if e.Referrer != "" {
			if err := checkDigest(e.Referrer); err != nil {
				return nil, fmt.Errorf("writing provenance: %s referrer: %w", e.Name, err)
			}
			d.Annotations = &structpb.Struct{Fields: map[string]*structpb.Value{
				ReferrerAnnotation: structpb.NewStringValue(e.Referrer)}}
		}
		byproducts = append(byproducts, d)
	}
	return byproducts, nil
}

// buildMetadata leaves out a time it was not told, rather than writing the
// zero time as if the build had run then.
func buildMetadata(b Build) *slsa.BuildMetadata {
	meta := &slsa.BuildMetadata{InvocationId: b.InvocationID}
	if !b.StartedOn.IsZero() {
		meta.StartedOn = timestamppb.New(b.StartedOn)
	}
	if !b.FinishedOn.IsZero() {
		meta.FinishedOn = timestamppb.New(b.FinishedOn)
	}
	return meta
}

// descriptor is a resource descriptor for "sha256:<hex>".
func descriptor(name, digest string) (*ita1.ResourceDescriptor, error) {
	algo, hex, ok := strings.Cut(digest, ":")
	if !ok || algo != "sha256" {
		return nil, fmt.Errorf("digest %q is not sha256:<hex>", digest)
	}
	d := &ita1.ResourceDescriptor{Name: name, Digest: map[string]string{algo: hex}}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("digest %q: %w", digest, err)
	}
	return d, nil
}

// checkDigest accepts "sha256:" and 64 lower-case hex digits, the only
// form a registry digest reference of the gate's takes.
func checkDigest(digest string) error {
	hexPart, ok := strings.CutPrefix(digest, "sha256:")
	if !ok || len(hexPart) != 64 || strings.Trim(hexPart, "0123456789abcdef") != "" {
		return fmt.Errorf("digest %q is not sha256:<64 lower-case hex digits>", digest)
	}
	return nil
}

// toStruct converts v, through its JSON, to the protobuf Struct the
// in-toto types hold free-form objects in.
func toStruct(v any) (*structpb.Struct, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return jsonStruct(b)
}

// protoToStruct is toStruct for a protobuf message, whose JSON names only
// protojson knows.
func protoToStruct(p *slsa.Provenance) (*structpb.Struct, error) {
	b, err := protojson.Marshal(p)
	if err != nil {
		return nil, err
	}
	return jsonStruct(b)
}

func jsonStruct(b []byte) (*structpb.Struct, error) {
	s := &structpb.Struct{}
	if err := protojson.Unmarshal(b, s); err != nil {
		return nil, err
	}
	return s, nil
}

// Provenance is a statement read back: the fields a verifier checks.
type Provenance struct {
	// Subjects are the subject digests, "sha256:<hex>".
	Subjects []string
	// BuilderID is runDetails.builder.id.
	BuilderID string
	// Gate is the verdict and policy recorded.
	Gate Gate
	// Evidence are the byproducts by name.
	Evidence map[string]Evidence
	// FinishedOn is when the gate passed the image; zero when absent.
	FinishedOn time.Time
	// Predicate is the whole predicate, for display.
	Predicate *slsa.Provenance
}

// Parse reads an in-toto statement (a DSSE payload) that must carry a SLSA
// v1 provenance predicate from the gpuhost gate. It checks the shape, not
// the subject: the caller compares Subjects with the image it verifies.
func Parse(data []byte) (*Provenance, error) {
	if len(data) > maxStatement {
		return nil, fmt.Errorf("reading provenance: %d bytes, more than %d", len(data), maxStatement)
	}
	var st ita1.Statement
	if err := protojson.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("reading provenance: %w", err)
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("reading provenance: %w", err)
	}
	if st.GetType() != ita1.StatementTypeUri {
		return nil, fmt.Errorf("reading provenance: statement type %q, want %q", st.GetType(), ita1.StatementTypeUri)
	}
	if st.GetPredicateType() != PredicateType {
		return nil, fmt.Errorf("reading provenance: predicate type %q, want %q", st.GetPredicateType(), PredicateType)
	}
	raw, err := protojson.Marshal(st.GetPredicate())
	if err != nil {
		return nil, fmt.Errorf("reading provenance: %w", err)
	}
	var pred slsa.Provenance
	if err := protojson.Unmarshal(raw, &pred); err != nil {
		return nil, fmt.Errorf("reading provenance predicate: %w", err)
	}
	if err := pred.Validate(); err != nil {
		return nil, fmt.Errorf("reading provenance predicate: %w", err)
	}
	p := &Provenance{BuilderID: pred.GetRunDetails().GetBuilder().GetId(), Evidence: map[string]Evidence{}, Predicate: &pred}
	for _, s := range st.GetSubject() {
		if h := s.GetDigest()["sha256"]; h != "" {
			p.Subjects = append(p.Subjects, "sha256:"+h)
		}
	}
	if pred.GetBuildDefinition().GetBuildType() != BuildType {
		return nil, fmt.Errorf("reading provenance: build type %q, want %q", pred.GetBuildDefinition().GetBuildType(), BuildType)
	}
	extJSON, err := protojson.Marshal(pred.GetBuildDefinition().GetExternalParameters())
	if err != nil {
		return nil, fmt.Errorf("reading provenance: %w", err)
	}
	var ext externalParameters
	if err := json.Unmarshal(extJSON, &ext); err != nil {
		return nil, fmt.Errorf("reading provenance: external parameters: %w", err)
	}
	p.Gate = ext.Gate
	for _, b := range pred.GetRunDetails().GetByproducts() {
		h := b.GetDigest()["sha256"]
		if b.GetName() == "" || h == "" {
			continue
		}
		if _, dup := p.Evidence[b.GetName()]; dup {
			return nil, fmt.Errorf("reading provenance: byproduct %q is listed twice", b.GetName())
		}
		referrer, err := referrerOf(b)
		if err != nil {
			return nil, fmt.Errorf("reading provenance: byproduct %q: %w", b.GetName(), err)
		}
		p.Evidence[b.GetName()] = Evidence{Name: b.GetName(), MediaType: b.GetMediaType(), Digest: "sha256:" + h, Referrer: referrer}
	}
	if t := pred.GetRunDetails().GetMetadata().GetFinishedOn(); t != nil {
		if err := t.CheckValid(); err != nil {
			return nil, fmt.Errorf("reading provenance: finishedOn: %w", err)
		}
		p.FinishedOn = t.AsTime()
	}
	return p, nil
}

// referrerOf is the ReferrerAnnotation of a byproduct, "" when it has
// none. A value that is not a digest is refused, not dropped: a statement
// that says something unreadable about what it signs is not half-trusted.
func referrerOf(b *ita1.ResourceDescriptor) (string, error) {
	v, ok := b.GetAnnotations().GetFields()[ReferrerAnnotation]
	if !ok {
		return "", nil
	}
	s, isString := v.GetKind().(*structpb.Value_StringValue)
	if !isString {
		return "", fmt.Errorf("annotation %s is not a string", ReferrerAnnotation)
	}
	if err := checkDigest(s.StringValue); err != nil {
		return "", fmt.Errorf("annotation %s: %w", ReferrerAnnotation, err)
	}
	return s.StringValue, nil
}

// ErrSubject is wrapped when a statement is about another image.
var ErrSubject = errors.New("the provenance is about another image")

// About checks that digest is among p's subjects.
func (p *Provenance) About(digest string) error {
	for _, s := range p.Subjects {
		if s == digest {
			return nil
		}
	}
	return fmt.Errorf("%w: subjects %v, not %s", ErrSubject, p.Subjects, digest)
}
