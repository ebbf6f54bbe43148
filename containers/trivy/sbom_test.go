package trivy

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// bookworm builds a Debian 12 rootfs from testdata/bookworm in a temp dir.
func bookworm(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	put(t, root, "etc/os-release", readTestdata(t, "bookworm/os-release"))
	put(t, root, "var/lib/dpkg/status", readTestdata(t, "bookworm/status"))
	return root
}

func readTestdata(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func put(t *testing.T, root, name string, data []byte) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// cdxDoc is the part of a CycloneDX document the tests look at.
type cdxDoc struct {
	BOMFormat   string `json:"bomFormat"`
	SpecVersion string `json:"specVersion"`
	Metadata    struct {
		Component struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"component"`
	} `json:"metadata"`
	Components []struct {
		Name    string `json:"name"`
		Version string `json:"version"`
		Type    string `json:"type"`
		PURL    string `json:"purl"`
	} `json:"components"`
}

func decodeCDX(t *testing.T, data []byte) cdxDoc {
	t.Helper()
	var doc cdxDoc
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatalf("SBOM is not JSON: %v\n%s", err, data)
	}
	if doc.BOMFormat != "CycloneDX" || doc.SpecVersion != "1.6" {
		t.Fatalf("bomFormat %q specVersion %q, want CycloneDX 1.6", doc.BOMFormat, doc.SpecVersion)
	}
	return doc
}

// purls returns the PURLs of the library components, sorted.
func (d cdxDoc) purls() []string {
	var out []string
	for _, c := range d.Components {
		if c.Type == "library" {
			out = append(out, c.PURL)
		}
	}
	slices.Sort(out)
	return out
}

func TestSBOMListsDpkgPackages(t *testing.T) {
	data, err := SBOM(context.Background(), bookworm(t))
	if err != nil {
		t.Fatal(err)
	}
	doc := decodeCDX(t, data)
	want := []string{
		"pkg:deb/debian/bash@5.2.15-2%2Bb7?arch=amd64&distro=debian-12",
		"pkg:deb/debian/libssl3@3.0.11-1~deb12u2?arch=amd64&distro=debian-12",
		"pkg:deb/debian/openssl@3.0.11-1~deb12u2?arch=amd64&distro=debian-12",
		"pkg:deb/debian/zlib1g@1.2.13.dfsg-1?arch=amd64&distro=debian-12&epoch=1",
	}
	if got := doc.purls(); !slices.Equal(got, want) {
		t.Errorf("purls:\n got %q\nwant %q", got, want)
	}
	// The removed package must not appear: config-files is not installed.
	if strings.Contains(string(data), "oldie") {
		t.Error("SBOM lists a package that is not installed")
	}
	var osFound bool
	for _, c := range doc.Components {
		if c.Type == "operating-system" && c.Name == "debian" && c.Version == "12" {
			osFound = true
		}
	}
	if !osFound {
		t.Errorf("no operating-system component debian 12 in %+v", doc.Components)
	}
}

func TestSBOMErrors(t *testing.T) {
	ctx := context.Background()
	t.Run("no dpkg", func(t *testing.T) {
		root := t.TempDir()
		put(t, root, "etc/os-release", readTestdata(t, "bookworm/os-release"))
		_, err := SBOM(ctx, root)
		if err == nil || !strings.Contains(err.Error(), "/var/lib/dpkg/status") {
			t.Fatalf("err = %v, want one naming /var/lib/dpkg/status", err)
		}
	})
	t.Run("not debian", func(t *testing.T) {
		root := bookworm(t)
		put(t, root, "etc/os-release", []byte("ID=fedora\nVERSION_ID=40\n"))
		_, err := SBOM(ctx, root)
		if err == nil || !strings.Contains(err.Error(), "/etc/os-release") || !strings.Contains(err.Error(), "fedora") {
			t.Fatalf("err = %v, want unsupported fedora naming /etc/os-release", err)
		}
	})
	t.Run("missing root", func(t *testing.T) {
		if _, err := SBOM(ctx, filepath.Join(t.TempDir(), "nope")); err == nil {
			t.Fatal("no error for a missing rootfs")
		}
	})
}

// TestSBOMHostileRootfs plants the classic traps: the status file is a link
// to a file outside the tree, os-release a FIFO. Neither may be read or
// block.
func TestSBOMHostileRootfs(t *testing.T) {
	ctx := context.Background()
	outside := t.TempDir()
	put(t, outside, "status", readTestdata(t, "bookworm/status"))

	t.Run("status links out", func(t *testing.T) {
		root := bookworm(t)
		status := filepath.Join(root, "var/lib/dpkg/status")
		if err := os.Remove(status); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(outside, "status"), status); err != nil {
			t.Fatal(err)
		}
		_, err := SBOM(ctx, root)
		if err == nil {
			t.Fatal("SBOM followed a symlink out of the rootfs")
		}
	})
	t.Run("os-release fifo", func(t *testing.T) {
		root := bookworm(t)
		osr := filepath.Join(root, "etc/os-release")
		if err := os.Remove(osr); err != nil {
			t.Fatal(err)
		}
		if err := syscall.Mkfifo(osr, 0o644); err != nil {
			t.Skipf("mkfifo: %v", err)
		}
		_, err := SBOM(ctx, root)
		if err == nil || !strings.Contains(err.Error(), "os-release") {
			t.Fatalf("err = %v, want one naming os-release", err)
		}
	})
}

func TestBakedSBOMIsTheSameForTheSamePackages(t *testing.T) {
	at := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	bake := func(root string) []byte {
		t.Helper()
		fsys, closer, err := sysroot.Open(root)
		if err != nil {
			t.Fatal(err)
		}
		defer closer.Close()
		data, err := BakedSBOMFS(context.Background(), fsys, at)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	a, b := bake(bookworm(t)), bake(bookworm(t))
	if !bytes.Equal(a, b) {
		t.Fatalf("two trees of the same packages baked different SBOMs:\n%s\n%s", a, b)
	}
	doc := decodeCDX(t, a)
	if doc.Metadata.Component.Name != "/" {
		t.Errorf("root component %q, want /", doc.Metadata.Component.Name)
	}
	var full struct {
		Serial   string `json:"serialNumber"`
		Metadata struct {
			Timestamp string `json:"timestamp"`
			Component struct {
				Ref string `json:"bom-ref"`
			} `json:"component"`
		} `json:"metadata"`
		Components []struct {
			Ref string `json:"bom-ref"`
		} `json:"components"`
		Dependencies []struct {
			Ref       string   `json:"ref"`
			DependsOn []string `json:"dependsOn"`
		} `json:"dependencies"`
	}
	if err := json.Unmarshal(a, &full); err != nil {
		t.Fatal(err)
	}
	if full.Metadata.Timestamp != "2025-01-01T00:00:00Z" || !strings.HasPrefix(full.Serial, "urn:uuid:") {
		t.Errorf("timestamp %q, serial %q", full.Metadata.Timestamp, full.Serial)
	}
	// The graph still joins up: every reference names a component.
	refs := map[string]bool{full.Metadata.Component.Ref: true}
	for _, c := range full.Components {
		refs[c.Ref] = true
	}
	for _, d := range full.Dependencies {
		for _, r := range append([]string{d.Ref}, d.DependsOn...) {
			if !refs[r] {
				t.Errorf("dependency %q names no component", r)
			}
		}
	}
	// Another inventory is another document, with another serial number.
	other := bookworm(t)
	put(t, other, "var/lib/dpkg/status", []byte(strings.Replace(string(readTestdata(t, "bookworm/status")), "5.2.15-2+b7", "5.2.15-2+b8", 1)))
	c := bake(other)
	var oc struct {
		Serial string `json:"serialNumber"`
	}
	if err := json.Unmarshal(c, &oc); err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, c) || oc.Serial == full.Serial {
		t.Errorf("another bash build kept the serial number %s", oc.Serial)
	}
}
