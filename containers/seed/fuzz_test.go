package seed

import (
	"strings"
	"testing"
)

// FuzzParseRef feeds references as a template would write them.
func FuzzParseRef(f *testing.F) {
	for _, s := range []string{
		"nvcr.io/nvidia/pytorch:24.08-py3",
		"nvcr.io/nvidia/cuda@sha256:" + strings.Repeat("ab", 32),
		"nvcr.io/nvidia/cuda:12@sha256:" + strings.Repeat("ab", 32),
		"localhost:5000/x:y",
		"ubuntu:22.04",
		"nvcr.io//:",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		o := &Options{Allowed: []string{"nvcr.io", "localhost:5000"}}
		tg, err := parseRef(ref, o)
		if err != nil {
			if !strings.Contains(err.Error(), ref) {
				t.Errorf("error %q does not name the image", err)
			}
			return
		}
		host, _, _ := strings.Cut(ref, "/")
		if host != "nvcr.io" && host != "localhost:5000" {
			t.Errorf("%q accepted from a registry not allowed", ref)
		}
		if tg.digest != "" && !digestRe.MatchString(tg.digest) {
			t.Errorf("digest %q accepted", tg.digest)
		}
		if !strings.HasPrefix(ref, Repository(ref)) {
			t.Errorf("Repository(%q) = %q", ref, Repository(ref))
		}
	})
}

// FuzzManifestDocument feeds what a registry might answer for a pinned
// digest: the media type and the platform choice must never panic.
func FuzzManifestDocument(f *testing.F) {
	d := "sha256:" + strings.Repeat("cd", 32)
	f.Add([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"digest":"`+d+`","platform":{"os":"linux","architecture":"amd64"}}]}`), "")
	f.Add([]byte(`{"schemaVersion":2,"config":{},"layers":[]}`), "application/vnd.docker.distribution.manifest.v2+json; charset=utf-8")
	f.Add([]byte(`{"schemaVersion":1}`), "")
	f.Fuzz(func(t *testing.T, body []byte, header string) {
		mt, err := mediaType(body, header)
		if err != nil {
			return
		}
		if mt == "" && header == "" {
			t.Error("empty media type")
		}
		p := &puller{o: &Options{}, t: target{ref: "nvcr.io/x:y"}}
		if desc, err := p.pick(body); err == nil && !digestRe.MatchString(desc.Digest) {
			t.Errorf("picked %q", desc.Digest)
		}
	})
}
