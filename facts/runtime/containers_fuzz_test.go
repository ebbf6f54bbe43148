package runtime

import (
	"strings"
	"testing"
)

func FuzzContainerIndex(f *testing.F) {
	d := "sha256:" + strings.Repeat("ab", 32)
	f.Add([]byte(`{"schemaVersion":2,"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"` + d + `","size":528,"annotations":{"io.containerd.image.name":"nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04","org.opencontainers.image.ref.name":"nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04"}}]}`))
	f.Add([]byte(`{"schemaVersion":2,"manifests":[{"digest":"` + d + `"}]}`))
	f.Add([]byte(`{"schemaVersion":2,"manifests":null}`))
	f.Add([]byte(`{"schemaVersion":2,"manifests":[{"digest":"` + d + `","annotations":{"io.containerd.image.name":"\u0000"}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		images, err := parseImageIndex(data)
		if err != nil {
			return
		}
		if len(images) > maxSeededImages {
			t.Errorf("%d images, more than the bound", len(images))
		}
		for i, im := range images {
			if !layoutDigestRe.MatchString(im.Digest) {
				t.Errorf("bad digest %q accepted", im.Digest)
			}
			if len(im.Ref) > maxImageRef || strings.ContainsAny(im.Ref, "\x00\n\r\t ") {
				t.Errorf("bad ref %q accepted", im.Ref)
			}
			if i > 0 && images[i-1].Ref > im.Ref {
				t.Errorf("not sorted at %d", i)
			}
		}
	})
}
