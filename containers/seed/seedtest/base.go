package seedtest

import (
	"archive/tar"
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// Distro is what a base image's os-release and dpkg status say.
type Distro struct {
	// ID and VersionID as os-release spells them: debian 12, ubuntu 22.04.
	ID, VersionID string
	// Packages are "name version" pairs, installed.
	Packages []string
}

// Bookworm is a Debian 12 base with two packages no advisory of the demo
// DB names.
var Bookworm = Distro{ID: "debian", VersionID: "12", Packages: []string{"base-files 12.4+deb12u8", "busybox 1:1.35.0-4+b3"}}

// Base is a one-layer linux/amd64 image with the files a vulnerability
// scanner reads from an NGC base: /etc/os-release and the dpkg status.
// A seeded base without them could not be matched, so tests that gate an
// image seed this rather than random bytes.
func Base(t testing.TB, d Distro) v1.Image {
	t.Helper()
	var status strings.Builder
	for _, p := range d.Packages {
		name, version, _ := strings.Cut(p, " ")
		fmt.Fprintf(&status, "Package: %s\nStatus: install ok installed\nPriority: required\nArchitecture: amd64\nVersion: %s\nDescription: %s\n\n", name, version, name)
	}
	files := map[string]string{
		"etc/os-release":      fmt.Sprintf("ID=%s\nVERSION_ID=\"%s\"\nPRETTY_NAME=\"%s %s (gpuhost test base)\"\n", d.ID, d.VersionID, d.ID, d.VersionID),
		"var/lib/dpkg/status": status.String(),
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, name := range []string{"etc/os-release", "var/lib/dpkg/status"} {
		body := files[name]
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(body)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Config.Cmd = []string{"/bin/true"}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	return img
}
