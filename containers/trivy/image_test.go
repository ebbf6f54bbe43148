package trivy

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// tarEntry is one file of a test layer: a regular file, or a symlink when
// link is set, or another kind of entry (a directory, a hard link to link)
// when typ is set.
type tarEntry struct {
	name, link string
	data       []byte
	typ        byte
}

func layerOf(t *testing.T, entries ...tarEntry) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		hdr := &tar.Header{Name: e.name, Mode: 0o644, Size: int64(len(e.data)), Typeflag: tar.TypeReg}
		switch {
		case e.typ != 0:
			hdr = &tar.Header{Name: e.name, Mode: 0o755, Linkname: e.link, Typeflag: e.typ}
		case e.link != "":
			hdr = &tar.Header{Name: e.name, Mode: 0o777, Linkname: e.link, Typeflag: tar.TypeSymlink}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := tw.Write(e.data); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// seededLayout writes a layout holding one image of layers, annotated with
// ref, and returns the directory and the image's digest.
func seededLayout(t *testing.T, ref string, layers ...v1.Layer) (string, string) {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.AppendImage(img, layout.WithAnnotations(map[string]string{refNameAnnotation: ref})); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return dir, d.String()
}

// bookwormImage is the bookworm rootfs as a two-layer image: os-release is
// the usual link into /usr/lib, and the top layer replaces the dpkg status
// with one where bash is gone.
func bookwormImage(t *testing.T) (string, string) {
	status := readTestdata(t, "bookworm/status")
	i := bytes.Index(status, []byte("Package: bash"))
	j := bytes.Index(status, []byte("Package: oldie"))
	upper := append(slices.Clone(status[:i]), status[j:]...)
	return seededLayout(t, "nvcr.io/nvidia/cuda:12.2.0-base-debian12",
		layerOf(t,
			tarEntry{name: "usr/lib/os-release", data: readTestdata(t, "bookworm/os-release")},
			tarEntry{name: "etc/os-release", link: "../usr/lib/os-release"},
			tarEntry{name: "var/lib/dpkg/status", data: status},
			tarEntry{name: "etc/passwd", data: []byte("root:x:0:0::/root:/bin/sh\n")},
		),
		layerOf(t, tarEntry{name: "./var/lib/dpkg/status", data: upper}),
	)
}

func TestSBOMImage(t *testing.T) {
	dir, digest := bookwormImage(t)
	data, err := SBOMImage(context.Background(), dir, digest)
	if err != nil {
		t.Fatal(err)
	}
	doc := decodeCDX(t, data)
	want := []string{
		"pkg:deb/debian/libssl3@3.0.11-1~deb12u2?arch=amd64&distro=debian-12",
		"pkg:deb/debian/openssl@3.0.11-1~deb12u2?arch=amd64&distro=debian-12",
		"pkg:deb/debian/zlib1g@1.2.13.dfsg-1?arch=amd64&distro=debian-12&epoch=1",
	}
	if got := doc.purls(); !slices.Equal(got, want) {
		t.Errorf("purls (upper layer drops bash):\n got %q\nwant %q", got, want)
	}
	if doc.Metadata.Component.Type != "container" || doc.Metadata.Component.Name != "nvcr.io/nvidia/cuda:12.2.0-base-debian12" {
		t.Errorf("root component = %+v", doc.Metadata.Component)
	}
}

func TestImageVulnerabilities(t *testing.T) {
	dir, digest := bookwormImage(t)
	got, err := ImageVulnerabilities(context.Background(), dir, digest, buildDB(t, "bookworm"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, f := range got.Findings {
		ids = append(ids, f.Package+" "+f.ID)
	}
	want := []string{"libssl3 CVE-2023-50782", "libssl3 CVE-2024-5535", "openssl CVE-2023-50782", "openssl CVE-2024-5535"}
	if !slices.Equal(ids, want) {
		t.Errorf("findings = %q, want %q", ids, want)
	}
}

func TestSBOMImageErrors(t *testing.T) {
	ctx := context.Background()
	dir, digest := bookwormImage(t)
	t.Run("unknown digest", func(t *testing.T) {
		_, err := SBOMImage(ctx, dir, "sha256:"+strings.Repeat("0", 64))
		if err == nil || !strings.Contains(err.Error(), "index.json") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("bad digest", func(t *testing.T) {
		if _, err := SBOMImage(ctx, dir, "latest"); err == nil {
			t.Fatal("no error for a digest that is not one")
		}
	})
	t.Run("blob links out", func(t *testing.T) {
		dir, digest := bookwormImage(t)
		outside := filepath.Join(t.TempDir(), "blob")
		if err := os.WriteFile(outside, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
		entries, err := os.ReadDir(filepath.Join(dir, "blobs", "sha256"))
		if err != nil || len(entries) == 0 {
			t.Fatal(err)
		}
		blob := filepath.Join(dir, "blobs", "sha256", entries[0].Name())
		os.Remove(blob)
		if err := os.Symlink(outside, blob); err != nil {
			t.Fatal(err)
		}
		// The layout is read as the target's own tree: the link resolves
		// inside it, where nothing is, and never reaches the file outside.
		_, err = SBOMImage(ctx, dir, digest)
		if err == nil || !strings.Contains(err.Error(), entries[0].Name()) {
			t.Fatalf("err = %v, want a refusal naming the linked blob", err)
		}
	})
	t.Run("os-release links to a file not taken", func(t *testing.T) {
		dir, digest := seededLayout(t, "x",
			layerOf(t,
				tarEntry{name: "etc/os-release", link: "/etc/passwd"},
				tarEntry{name: "etc/passwd", data: []byte("ID=debian\nVERSION_ID=12\n")},
				tarEntry{name: "var/lib/dpkg/status", data: readTestdata(t, "bookworm/status")},
			))
		_, err := SBOMImage(ctx, dir, digest)
		if err == nil || !strings.Contains(err.Error(), "os-release") {
			t.Fatalf("err = %v, want os-release absent", err)
		}
	})
	_ = digest
}

// An image's layers are applied as containerd unpacks them, not as
// go-containerregistry flattens them: a path twice in one layer is its
// last entry, as GNU tar leaves it when it extracts the layer (the peer);
// whiteouts and opaque directories hide only what lower layers put there;
// a directory, or a file where a directory was, takes wanted files away;
// and a hard link reads its target's bytes.
func TestImageLayersApplyAsContainerdDoes(t *testing.T) {
	status := readTestdata(t, "bookworm/status")
	i, j := bytes.Index(status, []byte("Package: bash")), bytes.Index(status, []byte("Package: oldie"))
	decoy := append(slices.Clone(status[:i]), status[j:]...)
	const dpkg = "var/lib/dpkg/status"
	apply := func(layers ...v1.Layer) (map[string][]byte, error) {
		t.Helper()
		img, err := mutate.AppendLayers(empty.Image, layers...)
		if err != nil {
			t.Fatal(err)
		}
		files, err := imageFiles(context.Background(), img)
		out := map[string][]byte{}
		for k, f := range files {
			out[k] = f.Data
		}
		return out, err
	}

	twice := []tarEntry{{name: dpkg, data: decoy}, {name: "./" + dpkg, data: status}}
	got, err := apply(layerOf(t, twice...))
	if err != nil || !bytes.Equal(got[dpkg], status) {
		t.Errorf("a path twice in a layer: %v, status is the decoy: %v", err, bytes.Equal(got[dpkg], decoy))
	}
	// The peer: GNU tar extracts the same layer.
	dir := t.TempDir()
	rc, err := layerOf(t, twice...).Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("tar", "-x", "-C", dir)
	cmd.Stdin = rc
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("tar -x: %v\n%s", err, out)
	}
	if extracted, err := os.ReadFile(filepath.Join(dir, dpkg)); err != nil || !bytes.Equal(extracted, got[dpkg]) {
		t.Errorf("tar -x leaves another status than ours (%v)", err)
	}

	base := layerOf(t, tarEntry{name: dpkg, data: decoy}, tarEntry{name: "usr/lib/os-release", data: []byte("ID=debian\n")})
	for name, tc := range map[string]struct {
		upper *[]tarEntry
		want  map[string]bool // wanted paths present afterwards
	}{
		"whiteout":         {&[]tarEntry{{name: "var/lib/dpkg/.wh.status"}}, map[string]bool{dpkg: false, "usr/lib/os-release": true}},
		"whiteout dir":     {&[]tarEntry{{name: "var/lib/.wh.dpkg"}}, map[string]bool{dpkg: false}},
		"opaque then new":  {&[]tarEntry{{name: "var/lib/dpkg/.wh..wh..opq"}, {name: dpkg, data: status}}, map[string]bool{dpkg: true}},
		"opaque elsewhere": {&[]tarEntry{{name: "usr/lib/.wh..wh..opq"}}, map[string]bool{dpkg: true, "usr/lib/os-release": false}},
		"dir over file":    {&[]tarEntry{{name: dpkg, typ: tar.TypeDir}}, map[string]bool{dpkg: false}},
		"file over dir":    {&[]tarEntry{{name: "var/lib/dpkg", data: []byte("x")}}, map[string]bool{dpkg: false}},
		"hard link":        {&[]tarEntry{{name: "usr/lib/os-release", data: []byte("ID=ubuntu\n")}, {name: "etc/os-release", link: "usr/lib/os-release", typ: tar.TypeLink}}, map[string]bool{"etc/os-release": true}},
	} {
		got, err := apply(base, layerOf(t, *tc.upper...))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		for p, present := range tc.want {
			if _, ok := got[p]; ok != present {
				t.Errorf("%s: /%s present %v, want %v", name, p, ok, present)
			}
		}
		if name == "opaque then new" && !bytes.Equal(got[dpkg], status) {
			t.Errorf("%s: the layer's own status was hidden by its own opaque marker", name)
		}
		if name == "hard link" && string(got["etc/os-release"]) != "ID=ubuntu\n" {
			t.Errorf("%s: /etc/os-release reads %q", name, got["etc/os-release"])
		}
	}

	// A hard link to a file that is not read cannot be judged.
	if _, err := apply(layerOf(t, tarEntry{name: "etc/passwd", data: []byte("root\n")}, tarEntry{name: dpkg, link: "etc/passwd", typ: tar.TypeLink})); err == nil || !strings.Contains(err.Error(), "hard link") {
		t.Errorf("a hard link to an unread file: %v", err)
	}
}
