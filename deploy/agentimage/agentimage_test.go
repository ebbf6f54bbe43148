package agentimage

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// writeTar writes a tar of the named regular files (name -> content).
func writeTar(t *testing.T, path string, files map[string]string) {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), ModTime: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
		tw.Write([]byte(files[n]))
	}
	tw.Close()
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// extracted lists the flattened image's files with their modes.
func extracted(t *testing.T, rc io.ReadCloser) map[string]int64 {
	t.Helper()
	defer rc.Close()
	out := map[string]int64{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out[strings.TrimSuffix(h.Name, "/")] = h.Mode
	}
}

func TestBuildImage(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.tar")
	writeTar(t, base, map[string]string{"etc/os-release": "ID=debian\nVERSION_ID=\"12\"\n", "usr/lib/x86_64-linux-gnu/libc.so.6": "stand-in"})
	self, err := os.Executable() // an x86-64 ELF executable, as the agent is
	if err != nil {
		t.Fatal(err)
	}
	img, err := Build(base, self, Options{Version: "1.2.3", Revision: "abc"})
	if err != nil {
		t.Fatal(err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	c := cf.Config
	if !slices.Equal(c.Entrypoint, []string{"/usr/local/bin/gpuhost-agent", "agent"}) || len(c.Cmd) != 0 {
		t.Errorf("entrypoint %q cmd %q", c.Entrypoint, c.Cmd)
	}
	for _, e := range []string{"NVIDIA_VISIBLE_DEVICES=all", "NVIDIA_DRIVER_CAPABILITIES=utility"} {
		if !slices.Contains(c.Env, e) {
			t.Errorf("env lacks %s: %q", e, c.Env)
		}
	}
	if c.User != "0:0" || c.Labels["org.opencontainers.image.version"] != "1.2.3" || c.Labels["org.opencontainers.image.revision"] != "abc" {
		t.Errorf("user %q labels %v", c.User, c.Labels)
	}
	if cf.OS != "linux" || cf.Architecture != "amd64" || !cf.Created.Equal(time.Unix(0, 0)) {
		t.Errorf("platform %s/%s created %v", cf.OS, cf.Architecture, cf.Created)
	}
	mt, _ := img.MediaType()
	layers, _ := img.Layers()
	if mt != "application/vnd.oci.image.manifest.v1+json" || len(layers) != 2 || len(cf.History) != 2 {
		t.Errorf("media type %s, %d layers, %d history entries", mt, len(layers), len(cf.History))
	}
	files := extracted(t, mutate.Extract(img))
	if files["usr/local/bin/gpuhost-agent"] != 0o755 || files["var/lib/gpuhost"] != 0o700 || files["etc/os-release"] == 0 {
		t.Errorf("image files: %v", files)
	}

	// The same inputs give the same image, so a digest can be rebuilt and
	// checked.
	again, err := Build(base, self, Options{Version: "1.2.3", Revision: "abc"})
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := img.Digest()
	d2, _ := again.Digest()
	if d1 != d2 {
		t.Errorf("two builds of the same inputs: %s and %s", d1, d2)
	}
}

func TestBuildRefusesWhatCannotRun(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.tar")
	writeTar(t, base, map[string]string{"etc/os-release": "ID=debian\n"})
	script := filepath.Join(dir, "gpuhost-agent")
	os.WriteFile(script, []byte("#!/bin/sh\necho hi\n"), 0o755)
	for bin, want := range map[string]string{
		script:                         "not an ELF executable",
		filepath.Join(dir, "missing"):  "not an ELF executable",
		filepath.Join(dir, "base.tar"): "not an ELF executable",
	} {
		_, err := Build(base, bin, Options{})
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), bin) {
			t.Errorf("%s: err = %v, want %q naming the file", bin, err, want)
		}
	}
	self, _ := os.Executable()
	if _, err := Build(filepath.Join(dir, "no-base.tar"), self, Options{}); err == nil || !strings.Contains(err.Error(), "no-base.tar") {
		t.Errorf("a missing base: err = %v", err)
	}
}
