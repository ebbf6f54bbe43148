package provenance

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

var (
	imageDigest  = "sha256:" + strings.Repeat("1", 64)
	policyDigest = "sha256:" + strings.Repeat("2", 64)
	reportDigest = "sha256:" + strings.Repeat("3", 64)
	referrer     = "sha256:" + strings.Repeat("7", 64)
)

func build() Build {
	return Build{
		Repository:    "registry.example.com/gpu/debian-12",
		ImageDigest:   imageDigest,
		Template:      &File{Path: "images/debian-12-gpu.pkr.hcl", SHA256: strings.Repeat("4", 64)},
		LockFile:      &File{Path: "images/debian-12.lock", SHA256: strings.Repeat("5", 64)},
		Pins:          json.RawMessage(`{"driver":"535.261.03-1","packages":[{"name":"libnvidia-ml1","version":"535.261.03-1"}]}`),
		Mirror:        "http://deb.example/debian",
		NGCImages:     []Image{{Ref: "nvcr.io/nvidia/cuda:12.2.0-base", Digest: "sha256:" + strings.Repeat("6", 64)}},
		PluginVersion: "0.1.0",
		Gate:          Gate{Verdict: VerdictPass, PolicyDigest: policyDigest, FailOn: "high", FailOnSkip: "critical"},
		Evidence:      []Evidence{{Name: Report, MediaType: "application/vnd.gpuhost.report.v1+json", Digest: reportDigest, Referrer: referrer}},
		InvocationID:  "debian_12",
		StartedOn:     time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		FinishedOn:    time.Date(2026, 1, 1, 0, 30, 0, 0, time.UTC),
	}
}

func TestStatementRoundTrip(t *testing.T) {
	st, err := Statement(build())
	if err != nil {
		t.Fatal(err)
	}
	// The shape cosign's --type slsaprovenance1 and SLSA verifiers read.
	var doc struct {
		Type          string `json:"_type"`
		PredicateType string `json:"predicateType"`
		Subject       []struct {
			Name   string            `json:"name"`
			Digest map[string]string `json:"digest"`
		} `json:"subject"`
		Predicate struct {
			BuildDefinition struct {
				BuildType          string         `json:"buildType"`
				ExternalParameters map[string]any `json:"externalParameters"`
			} `json:"buildDefinition"`
			RunDetails struct {
				Builder struct {
					ID string `json:"id"`
				} `json:"builder"`
			} `json:"runDetails"`
		} `json:"predicate"`
	}
	if err := json.Unmarshal(st, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Type != "https://in-toto.io/Statement/v1" || doc.PredicateType != PredicateType ||
		len(doc.Subject) != 1 || doc.Subject[0].Digest["sha256"] != strings.TrimPrefix(imageDigest, "sha256:") ||
		doc.Predicate.BuildDefinition.BuildType != BuildType || doc.Predicate.RunDetails.Builder.ID != BuilderID {
		t.Fatalf("statement:\n%s", st)
	}
	for _, k := range []string{"template", "lock_file", "source", "pins", "gate"} {
		if doc.Predicate.BuildDefinition.ExternalParameters[k] == nil {
			t.Errorf("externalParameters lacks %s:\n%s", k, st)
		}
	}
	again, err := Statement(build())
	if err != nil || !bytes.Equal(st, again) {
		t.Errorf("the same build gives other bytes:\n%s\n%s", st, again)
	}

	p, err := Parse(st)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.About(imageDigest); err != nil {
		t.Error(err)
	}
	if err := p.About(policyDigest); !errors.Is(err, ErrSubject) {
		t.Errorf("About(another digest) = %v", err)
	}
	if p.Gate != build().Gate || p.Evidence[Report].Digest != reportDigest || p.Evidence[Report].Referrer != referrer || p.BuilderID != BuilderID ||
		!p.FinishedOn.Equal(build().FinishedOn) {
		t.Errorf("parsed %+v", p)
	}
}

func TestStatementRefuses(t *testing.T) {
	for name, edit := range map[string]func(*Build){
		"no subject digest":   func(b *Build) { b.ImageDigest = "" },
		"md5 subject":         func(b *Build) { b.ImageDigest = "md5:" + strings.Repeat("1", 32) },
		"short policy digest": func(b *Build) { b.Gate.PolicyDigest = "sha256:12" },
		"evidence digest":     func(b *Build) { b.Evidence[0].Digest = "nope" },
		"referrer digest":     func(b *Build) { b.Evidence[0].Referrer = "sha256:" + strings.Repeat("A", 64) },
		"short referrer":      func(b *Build) { b.Evidence[0].Referrer = "sha256:77" },
	} {
		b := build()
		edit(&b)
		if _, err := Statement(b); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	good, err := Statement(build())
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string]string{
		"not JSON":          "{",
		"v0.2 predicate":    strings.Replace(string(good), PredicateType, "https://slsa.dev/provenance/v0.2", 1),
		"legacy statement":  strings.Replace(string(good), "https://in-toto.io/Statement/v1", "https://in-toto.io/Statement/v0.1", 1),
		"other build type":  strings.Replace(string(good), BuildType, "https://example.com/other", 1),
		"unknown field":     strings.Replace(string(good), `"_type"`, `"extra":1,"_type"`, 1),
		"no predicate":      `{"_type":"https://in-toto.io/Statement/v1","subject":[{"digest":{"sha256":"` + strings.Repeat("1", 64) + `"}}],"predicateType":"` + PredicateType + `"}`,
		"twice the report":  strings.Replace(string(good), `"byproducts":[`, `"byproducts":[{"name":"report","digest":{"sha256":"`+strings.Repeat("9", 64)+`"}},`, 1),
		"over the size cap": `{"_type":"` + strings.Repeat(" ", maxStatement) + `"}`,
		"referrer not hex":  strings.Replace(string(good), referrer, "sha256:"+strings.Repeat("z", 64), 1),
		"referrer a number": strings.Replace(string(good), `"`+referrer+`"`, "7", 1),
	} {
		if _, err := Parse([]byte(data)); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// FuzzParse: the statement comes from a registry; Parse must not panic on
// anything, and what it accepts must say what a verifier relies on.
func FuzzParse(f *testing.F) {
	good, err := Statement(build())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(`{"_type":"https://in-toto.io/Statement/v1"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			return
		}
		if p.Predicate == nil || p.Evidence == nil {
			t.Fatalf("accepted without a predicate: %+v", p)
		}
		for _, s := range p.Subjects {
			if !strings.HasPrefix(s, "sha256:") {
				t.Fatalf("subject %q", s)
			}
		}
		for _, e := range p.Evidence {
			if e.Referrer != "" && checkDigest(e.Referrer) != nil {
				t.Fatalf("%s referrer %q", e.Name, e.Referrer)
			}
		}
	})
}
