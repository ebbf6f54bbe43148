package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// buildImage makes weak.raw and weak.qcow2 from a copy of tree, as the
// builder does, with no root and no loop device.
func buildImage(t testing.TB, tree string) (raw, qcow2 string) {
	t.Helper()
	for _, tool := range []string{"mkfs.ext4", "qemu-img", "cp"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not installed (make build-deps)", tool)
		}
	}
	dir := t.TempDir()
	copied := filepath.Join(dir, "tree")
	if out, err := exec.Command("cp", "-a", tree, copied).CombinedOutput(); err != nil {
		t.Fatalf("copying %s: %v\n%s", tree, err, out)
	}
	// A link to the host's password file: the image has none of its own,
	// so reading it must find nothing, never the host's.
	if err := os.Symlink("/etc/passwd", filepath.Join(copied, "etc/hostpw")); err != nil {
		t.Fatal(err)
	}
	raw, qcow2 = filepath.Join(dir, "weak.raw"), filepath.Join(dir, "weak.qcow2")
	if out, err := exec.Command("mkfs.ext4", "-q", "-d", copied, raw, "64M").CombinedOutput(); err != nil {
		t.Fatalf("mkfs.ext4: %v\n%s", err, out)
	}
	if out, err := exec.Command("qemu-img", "convert", "-O", "qcow2", raw, qcow2).CombinedOutput(); err != nil {
		t.Fatalf("qemu-img: %v\n%s", err, out)
	}
	return raw, qcow2
}

func imageStatuses(t *testing.T, o outcome) map[string]string {
	t.Helper()
	var rep struct {
		Results []struct {
			ID, Status string
			OutOfScope bool `json:"out_of_scope"`
		}
	}
	if err := json.Unmarshal([]byte(o.stdout), &rep); err != nil {
		t.Fatalf("report: %v\n%s\n%s", err, o.stdout, o.stderr)
	}
	// A check about the disk itself (its LUKS key slots) does not apply to
	// a tree; what applies to both must agree.
	out := map[string]string{}
	for _, r := range rep.Results {
		if !r.OutOfScope {
			out[r.ID] = r.Status
		}
	}
	return out
}

func TestScanImage(t *testing.T) {
	const tree = "testdata/rootfs-weak"
	raw, qcow2 := buildImage(t, tree)
	scanImage := func(a *app) *cobra.Command { return a.scanImageCommand() }

	want := runCommand(t, (*app).scanCommand, "rootfs", tree, "--format", "json")
	if want.code != 1 {
		t.Fatalf("scan rootfs of the weak tree: exit %d\n%s", want.code, want.stderr)
	}
	wantStatus := imageStatuses(t, want)
	if len(wantStatus) == 0 {
		t.Fatal("scan rootfs gave no results to compare")
	}
	for _, file := range []string{raw, qcow2} {
		got := runCommand(t, scanImage, file, "--format", "json")
		if got.code != 1 {
			t.Fatalf("scan image %s: exit %d, want 1\n%s", file, got.code, got.stderr)
		}
		gotStatus := imageStatuses(t, got)
		for id, st := range wantStatus {
			if gotStatus[id] != st {
				t.Errorf("%s: %s is %q, %q in the rootfs", file, id, gotStatus[id], st)
			}
		}
	}

	facts := runCommand(t, func(a *app) *cobra.Command { return a.factsImageCommand() }, qcow2)
	if facts.code != 0 {
		t.Fatalf("facts image: exit %d\n%s", facts.code, facts.stderr)
	}
	var doc struct {
		Target struct{ Kind, Ref string }
	}
	if err := json.Unmarshal([]byte(facts.stdout), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Target.Kind != "image" || doc.Target.Ref != qcow2 {
		t.Errorf("target %+v, want kind image, ref %s", doc.Target, qcow2)
	}
	if host, err := os.ReadFile("/etc/passwd"); err == nil && len(host) > 8 && strings.Contains(facts.stdout, strings.SplitN(string(host), "\n", 2)[0]) {
		t.Error("the facts hold a line of the host's /etc/passwd")
	}
}

func TestScanImageBroken(t *testing.T) {
	_, qcow2 := buildImage(t, "testdata/rootfs-weak")
	scanImage := func(a *app) *cobra.Command { return a.scanImageCommand() }
	data, err := os.ReadFile(qcow2)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	half := filepath.Join(dir, "half.qcow2")
	random := filepath.Join(dir, "random.img")
	if err := os.WriteFile(half, data[:len(data)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	noise := make([]byte, 1<<20)
	for i := range noise {
		noise[i] = byte(i*7919 + i>>8)
	}
	if err := os.WriteFile(random, noise, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, file := range []string{half, random, filepath.Join(dir, "missing.qcow2")} {
		for _, build := range []func(*app) *cobra.Command{scanImage, func(a *app) *cobra.Command { return a.factsImageCommand() }} {
			o := runCommand(t, build, file)
			if o.code != 2 {
				t.Errorf("%s: exit %d, want 2\n%s", file, o.code, o.stdout)
			}
			if !strings.Contains(o.stderr, file) {
				t.Errorf("%s: the error does not name the file:\n%s", file, o.stderr)
			}
		}
	}
}

func BenchmarkScanImage(b *testing.B) {
	_, qcow2 := buildImage(b, "testdata/rootfs-weak")
	scanImage := func(a *app) *cobra.Command { return a.scanImageCommand() }
	b.ReportAllocs()
	for b.Loop() {
		var out, errOut bytes.Buffer
		a := &app{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut, log: slog.New(slog.DiscardHandler)}
		cmd := scanImage(a)
		cmd.SetArgs([]string{qcow2, "--format", "json"})
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SilenceUsage, cmd.SilenceErrors = true, true
		var ee *exitError
		if err := cmd.ExecuteContext(context.Background()); !errors.As(err, &ee) || ee.code != 1 {
			b.Fatalf("scan image: %v, want exit 1\n%s", err, errOut.String())
		}
	}
}
