package engine

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"
)

// module is a valid module of exactly n bytes.
func module(n int) []byte {
	head := "package x\n"
	return []byte(head + strings.Repeat("#", n-len(head)-1) + "\n")
}

func TestLoadFSBounds(t *testing.T) {
	pack := func(files int, size int) fstest.MapFS {
		fs := fstest.MapFS{}
		for i := range files {
			fs[fmt.Sprintf("p%d.rego", i)] = &fstest.MapFile{Data: module(size)}
		}
		return fs
	}
	if _, err := LoadFS(pack(1, maxPolicyFile), "at"); err != nil {
		t.Errorf("a file at the limit: %v", err)
	}
	if _, err := LoadFS(pack(1, maxPolicyFile+1), "past"); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("a file past the limit: %v", err)
	}
	if _, err := LoadFS(pack(maxPackBytes/maxPolicyFile, maxPolicyFile), "at"); err != nil {
		t.Errorf("a pack at the limit: %v", err)
	}
	past := pack(maxPackBytes/maxPolicyFile, maxPolicyFile)
	past["extra.rego"] = &fstest.MapFile{Data: module(16)}
	if _, err := LoadFS(past, "past"); err == nil || !strings.Contains(err.Error(), "add up to more than") {
		t.Errorf("a pack past the limit: %v", err)
	}
}

// tarball is a gzipped tar of files entries of size bytes each.
func tarball(t *testing.T, files, size int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	data := bytes.Repeat([]byte("x"), size)
	for i := range files {
		if err := tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("f%d", i), Mode: 0o644, Size: int64(size), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestCheckBundleSize(t *testing.T) {
	for _, tc := range []struct {
		name         string
		files, size  int
		wantContains string
	}{
		{"entries at the limit", maxPackFiles, 1, ""},
		{"entries past the limit", maxPackFiles + 1, 1, "more than 10000 files"},
		{"bytes at the limit", 4, maxPackBytes / 4, ""},
		{"bytes past the limit", 5, maxPackBytes / 4, "decompress to more than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkBundleSize(bytes.NewReader(tarball(t, tc.files, tc.size)))
			switch {
			case tc.wantContains == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantContains != "" && (err == nil || !strings.Contains(err.Error(), tc.wantContains)):
				t.Fatalf("checkBundleSize = %v; want %q", err, tc.wantContains)
			}
		})
	}
	if err := checkBundleSize(strings.NewReader("not gzip")); err == nil {
		t.Error("a file that is no gzip passed")
	}
}
