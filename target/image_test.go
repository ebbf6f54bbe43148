package target

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
)

// TestImageMatchesRootfs: the facts of an image built from a tree are the
// facts of the tree, but for the target.
func TestImageMatchesRootfs(t *testing.T) {
	if _, err := exec.LookPath("mkfs.ext4"); err != nil {
		t.Skip("mkfs.ext4 not installed (e2fsprogs)")
	}
	const tree = "../cmd/gpuhost/testdata/rootfs-weak"
	dir := t.TempDir()
	copied, img := filepath.Join(dir, "tree"), filepath.Join(dir, "weak.raw")
	if out, err := exec.Command("cp", "-a", tree, copied).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v\n%s", err, out)
	}
	// mkfs.ext4 gives every filesystem a lost+found; the tree gets the
	// same, so that a walk of either sees the same entries.
	if err := os.Mkdir(filepath.Join(copied, "lost+found"), 0o700); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-d", copied, img, "64M").CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v\n%s", err, out)
	}
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ctx := context.Background()
	want, err := Rootfs(ctx, copied, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	got, err := Image(ctx, img, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if got.Target.Kind != facts.KindImage || got.Target.Ref != img {
		t.Errorf("target %+v", got.Target)
	}
	if st := got.Collectors["gpu"]; st.Status != facts.StatusNotApplicable {
		t.Errorf("gpu collector on an image: %+v, want not_applicable", st)
	}
	got.Target, want.Target = facts.Target{}, facts.Target{}
	g, _ := json.MarshalIndent(got, "", " ")
	w, _ := json.MarshalIndent(want, "", " ")
	// Messages name the file as it is inside the target, so they match too;
	// only the root in a message may differ.
	if gs, ws := string(g), strings.ReplaceAll(string(w), copied, img); gs != ws {
		t.Errorf("image facts differ from rootfs facts:\n--- image\n%s\n--- rootfs\n%s", gs, ws)
	}
}

func TestImageBroken(t *testing.T) {
	file := filepath.Join(t.TempDir(), "junk.img")
	if out, err := exec.Command("truncate", "-s", "1M", file).CombinedOutput(); err != nil {
		t.Skipf("truncate: %v %s", err, out)
	}
	if _, err := Image(context.Background(), file, Options{}); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("an empty disk: %v, want an error naming %s", err, file)
	}
}
