package rootfs

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/packer-plugin-sdk/chroot"
)

// escapeTree makes a rootfs whose links lead out of it, and a host file they
// point at.
func escapeTree(t *testing.T) (rootfs, hostFile string) {
	t.Helper()
	base := t.TempDir()
	rootfs = filepath.Join(base, "rootfs")
	hostFile = filepath.Join(base, "host-secret")
	if err := os.WriteFile(hostFile, []byte("host data\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"etc", "tmp"} {
		if err := os.MkdirAll(filepath.Join(rootfs, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	must(t, os.Symlink(hostFile, filepath.Join(rootfs, "etc/abs-link")))
	must(t, os.Symlink("../../host-secret", filepath.Join(rootfs, "etc/rel-link")))
	must(t, os.Symlink(base, filepath.Join(rootfs, "outdir")))
	must(t, os.WriteFile(filepath.Join(rootfs, "etc/hostname"), []byte("image\n"), 0o644))
	return rootfs, hostFile
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func noWrap(s string) (string, error) { return s, nil }

func TestUploadStaysInRoot(t *testing.T) {
	rootfs, hostFile := escapeTree(t)
	c := newCommunicator(rootfs, rootfs, noWrap)
	for _, dst := range []string{"/etc/abs-link", "/etc/rel-link", "/outdir/host-secret", "/../host-secret", "../../host-secret"} {
		err := c.Upload(dst, strings.NewReader("overwritten\n"), nil)
		got, _ := os.ReadFile(hostFile)
		if string(got) != "host data\n" {
			t.Fatalf("upload to %s changed the host file: %q", dst, got)
		}
		if strings.HasPrefix(dst, "/etc/") || strings.HasPrefix(dst, "/outdir") {
			if err == nil {
				t.Errorf("upload to %s through a link out of the root: no error", dst)
			}
		}
	}
	// ".." is clamped at the root: the file lands inside it.
	if data, err := os.ReadFile(filepath.Join(rootfs, "host-secret")); err != nil || string(data) != "overwritten\n" {
		t.Errorf("clamped upload: %q, %v", data, err)
	}
	// A normal upload, with parents made and the mode kept.
	fi, err := os.Stat(hostFile)
	must(t, err)
	must(t, c.Upload("/opt/new/file.sh", strings.NewReader("#!/bin/sh\n"), &fi))
	got, err := os.Stat(filepath.Join(rootfs, "opt/new/file.sh"))
	if err != nil || got.Mode().Perm() != 0o600 {
		t.Errorf("uploaded file: %v, %v", got, err)
	}
}

// TestSDKCommunicatorEscapes documents why file transfer is not left to the
// SDK's chroot communicator: its Download follows a link out of the root.
func TestSDKCommunicatorEscapes(t *testing.T) {
	rootfs, _ := escapeTree(t)
	var buf bytes.Buffer
	sdk := &chroot.Communicator{Chroot: rootfs, CmdWrapper: noWrap}
	if err := sdk.Download("/etc/abs-link", &buf); err != nil || buf.String() != "host data\n" {
		t.Skipf("the SDK communicator no longer escapes (%v); the os.Root wrapper may be unnecessary", err)
	}
	buf.Reset()
	c := newCommunicator(rootfs, rootfs, noWrap)
	for _, src := range []string{"/etc/abs-link", "/etc/rel-link", "/outdir/host-secret"} {
		if err := c.Download(src, &buf); err == nil {
			t.Errorf("download of %s through a link out of the root: no error", src)
		}
	}
	if buf.Len() != 0 {
		t.Errorf("host data leaked: %q", buf.String())
	}
	must(t, c.Download("/etc/hostname", &buf))
	if buf.String() != "image\n" {
		t.Errorf("download: %q", buf.String())
	}
}

func TestUploadDirAndDownloadDir(t *testing.T) {
	rootfs, _ := escapeTree(t)
	c := newCommunicator(rootfs, rootfs, noWrap)
	src := t.TempDir()
	must(t, os.MkdirAll(filepath.Join(src, "a/b"), 0o755))
	must(t, os.WriteFile(filepath.Join(src, "a/b/f.txt"), []byte("f\n"), 0o644))
	must(t, os.Symlink("b/f.txt", filepath.Join(src, "a/link")))

	// "src/" copies the contents; "src" into an existing directory nests it.
	must(t, c.UploadDir("/srv/x", src+"/", nil))
	must(t, c.UploadDir("/srv", src, nil))
	for _, p := range []string{"srv/x/a/b/f.txt", "srv/" + filepath.Base(src) + "/a/b/f.txt"} {
		if data, err := os.ReadFile(filepath.Join(rootfs, p)); err != nil || string(data) != "f\n" {
			t.Errorf("%s: %q, %v", p, data, err)
		}
	}
	if l, err := os.Readlink(filepath.Join(rootfs, "srv/x/a/link")); err != nil || l != "b/f.txt" {
		t.Errorf("link: %q, %v", l, err)
	}
	// Uploading through a link out of the root fails.
	if err := c.UploadDir("/outdir/planted", src+"/", nil); err == nil {
		t.Error("UploadDir through a link out of the root: no error")
	}

	dst := t.TempDir()
	must(t, c.DownloadDir("/srv/x", dst, nil))
	if data, err := os.ReadFile(filepath.Join(dst, "a/b/f.txt")); err != nil || string(data) != "f\n" {
		t.Errorf("downloaded: %q, %v", data, err)
	}
	if _, err := os.Lstat(filepath.Join(dst, "a/link")); err == nil {
		t.Error("a symlink from the rootfs was recreated on the host")
	}
}

// TestDownloadFollowsLinksAsTheChroot: an absolute link inside the rootfs
// names the rootfs's own file, as apt's trusted.gpg.d links do, and a
// link at a host path reads the same path under the rootfs, never the
// host's file.
func TestDownloadFollowsLinksAsTheChroot(t *testing.T) {
	rootfs, hostFile := escapeTree(t)
	must(t, os.MkdirAll(filepath.Join(rootfs, "usr/share/keyrings"), 0o755))
	must(t, os.MkdirAll(filepath.Join(rootfs, "etc/apt/trusted.gpg.d"), 0o755))
	must(t, os.WriteFile(filepath.Join(rootfs, "usr/share/keyrings/archive.gpg"), []byte("image key\n"), 0o644))
	must(t, os.Symlink("/usr/share/keyrings/archive.gpg", filepath.Join(rootfs, "etc/apt/trusted.gpg.d/archive.gpg")))
	c := newCommunicator(rootfs, rootfs, noWrap)
	var got bytes.Buffer
	if err := c.Download("/etc/apt/trusted.gpg.d/archive.gpg", &got); err != nil || got.String() != "image key\n" {
		t.Errorf("download through an absolute link inside the root: %q, %v", got.String(), err)
	}
	for _, src := range []string{"/etc/abs-link", "/etc/rel-link", "/outdir/host-secret"} {
		got.Reset()
		err := c.Download(src, &got)
		if strings.Contains(got.String(), "host data") {
			t.Fatalf("download of %s read the host's %s", src, hostFile)
		}
		if err == nil {
			t.Errorf("download of %s, whose target is not in the rootfs: no error", src)
		}
	}
}
