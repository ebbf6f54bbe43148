package trivy

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	ftypes "github.com/aquasecurity/trivy/pkg/fanal/types"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/gpuhost/gpuhost/facts/osinfo"
	"github.com/gpuhost/gpuhost/facts/packages"
)

// parseStatus is what readInventory makes of a dpkg status file.
func parseStatus(data []byte) ([]ftypes.Package, error) {
	installed, err := packages.ParseDpkgInstalled(data)
	if err != nil {
		return nil, err
	}
	return toPackages(installed)
}

// parseOSRelease is what readInventory makes of an os-release file.
func parseOSRelease(data []byte) (ftypes.OS, error) {
	vars, err := osinfo.OSReleaseVars(data)
	if err != nil {
		return ftypes.OS{}, err
	}
	return trivyOS(vars)
}

func FuzzParseStatus(f *testing.F) {
	f.Add([]byte("Package: a\nStatus: install ok installed\nVersion: 1:2.3-4\nSource: b (2.3-1)\n"))
	f.Add([]byte("Package: a\nStatus: install ok installed\nVersion: 1.0\n\nPackage: a\nStatus: install ok installed\nVersion: 1.0\n"))
	f.Add([]byte(" continuation\n"))
	f.Add([]byte("Package: a\nStatus: install ok installed\nVersion: 1.0\nSource: b (\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		pkgs, err := parseStatus(data)
		if err != nil {
			return
		}
		for i, p := range pkgs {
			if p.Name == "" || p.SrcName == "" || p.ID == "" {
				t.Fatalf("package %d lacks a name or ID: %+v", i, p)
			}
			if i > 0 && pkgs[i-1].Name+"\x00"+pkgs[i-1].Arch >= p.Name+"\x00"+p.Arch {
				t.Fatalf("not sorted or duplicated at %d", i)
			}
		}
	})
}

func FuzzParseOSRelease(f *testing.F) {
	f.Add([]byte("ID=ubuntu\nVERSION_ID=\"22.04\"\n"))
	f.Add([]byte("ID=linuxmint\nID_LIKE=\"ubuntu debian\"\nVERSION_ID=21\n"))
	f.Add([]byte("ID='\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		osr, err := parseOSRelease(data)
		if err != nil {
			return
		}
		if osr.Family != "debian" && osr.Family != "ubuntu" {
			t.Fatalf("family %q", osr.Family)
		}
		if strings.TrimSpace(osr.Name) == "" {
			t.Fatal("empty version accepted")
		}
	})
}

// BenchmarkParseStatus parses a status file the size of a CUDA image's
// (about 2,000 packages).
func BenchmarkParseStatus(b *testing.B) {
	var sb strings.Builder
	for i := range 2000 {
		fmt.Fprintf(&sb, "Package: pkg%d\nStatus: install ok installed\nArchitecture: amd64\nSource: src%d (1:2.%d-1)\nVersion: 1:2.%d-1+b1\nDescription: a package\n more text\n\n", i, i/3, i, i)
	}
	data := []byte(sb.String())
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := parseStatus(data); err != nil {
			b.Fatal(err)
		}
	}
}

// A layer is untrusted: any bytes as a layer's tar stream, applied over a
// lower layer, give an error or only wanted files within their bounds.
func FuzzApplyLayer(f *testing.F) {
	f.Add([]byte{})
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "var/lib/dpkg/status", Size: 3, Mode: 0o644, Typeflag: tar.TypeReg},
		{Name: "var/lib/dpkg/.wh..wh..opq", Typeflag: tar.TypeReg},
		{Name: "etc/os-release", Linkname: "var/lib/dpkg/status", Typeflag: tar.TypeLink},
	} {
		if err := tw.WriteHeader(h); err != nil {
			f.Fatal(err)
		}
		if h.Size > 0 {
			tw.Write([]byte("abc"))
		}
	}
	tw.Close()
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		files := fstest.MapFS{"usr/lib/os-release": &fstest.MapFile{Data: []byte("ID=debian\n")}}
		layer := static.NewLayer(data, types.OCIUncompressedLayer)
		entries := 0
		if err := applyLayer(context.Background(), layer, files, &entries); err != nil {
			return
		}
		for name, file := range files {
			limit, ok := wanted[name]
			if !ok || int64(len(file.Data)) > limit {
				t.Fatalf("kept %q (%d bytes)", name, len(file.Data))
			}
		}
	})
}
