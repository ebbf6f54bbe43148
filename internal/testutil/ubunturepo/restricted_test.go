package ubunturepo

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpuhost/gpuhost/internal/testutil"
)

// The restricted component: each branch's userspace at the archive's
// versions, the older build in the release pocket and the newer in
// -updates, and the precompiled modules, one build for the older driver,
// whose nvidia.ko modinfo reads as that release and whose libnvidia-ml
// carries NVML's soname.
func TestRestrictedComponent(t *testing.T) {
	testutil.Tool(t, "dpkg-deb", "dpkg")
	testutil.Tool(t, "cc", "gcc")
	dir := t.TempDir()
	b := &suiteBuilder{suite: "noble", root: filepath.Join(dir, "root"), work: filepath.Join(dir, "work"), kernel: "6.1.0-50-amd64"}
	if err := os.MkdirAll(b.work, 0o755); err != nil {
		t.Fatal(err)
	}
	pkgs, updates, err := b.restrictedPackages()
	if err != nil {
		t.Fatal(err)
	}
	index := func(list []published) map[string]published {
		m := map[string]published{}
		for _, p := range list {
			if p.component != "restricted" {
				t.Errorf("%s is in %s", p.stanza.get("Package"), p.component)
			}
			m[p.stanza.get("Package")] = p
		}
		return m
	}
	release, newer := index(pkgs), index(updates)
	if v := release["nvidia-headless-no-dkms-580-server-open"].stanza.get("Version"); v != "580.95.05-0ubuntu0.24.04.2" {
		t.Errorf("release pocket: nvidia-headless-no-dkms-580-server-open %q", v)
	}
	if v := newer["nvidia-headless-no-dkms-580-server-open"].stanza.get("Version"); v != "580.105.08-0ubuntu0.24.04.2" {
		t.Errorf("-updates: nvidia-headless-no-dkms-580-server-open %q", v)
	}
	if d := release["nvidia-headless-no-dkms-580-server"].stanza.get("Depends"); !strings.Contains(d, "libnvidia-compute-580-server (= 580.95.05-0ubuntu0.24.04.2)") {
		t.Errorf("headless depends %q", d)
	}
	mods := ArchiveModulesPackage("580", true, b.kernel)
	m, ok := release[mods]
	if !ok || newer[mods].file != "" {
		t.Fatalf("%s: release %v, -updates %v; want one build, in the release pocket", mods, ok, newer[mods].file != "")
	}
	if d := m.stanza.get("Depends"); d != "linux-image-6.1.0-50-amd64, nvidia-kernel-common-580-server (>= 580.95.05)" {
		t.Errorf("%s depends %q", mods, d)
	}
	if d := release["linux-modules-nvidia-580-server-open-generic"].stanza.get("Depends"); !strings.HasPrefix(d, mods+" (= ") {
		t.Errorf("the -generic meta package depends %q", d)
	}

	tree := extract(t, filepath.Join(b.root, m.file))
	ko := filepath.Join(tree, "lib/modules/6.1.0-50-amd64/kernel/nvidia-580srv-open/nvidia.ko")
	if info := modinfo(t, ko); !strings.Contains(info, "version=580.95.05\x00") || !strings.Contains(info, "license=Dual MIT/GPL\x00") {
		t.Errorf("nvidia.ko modinfo %q", info)
	}
	lib := extract(t, filepath.Join(b.root, newer["libnvidia-compute-580-server"].file))
	so, err := elf.Open(filepath.Join(lib, "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.580.105.08"))
	if err != nil {
		t.Fatal(err)
	}
	defer so.Close()
	if names, err := so.DynString(elf.DT_SONAME); err != nil || len(names) != 1 || names[0] != "libnvidia-ml.so.1" {
		t.Errorf("soname %v %v", names, err)
	}
	if link, err := os.Readlink(filepath.Join(lib, "usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1")); err != nil || link != "libnvidia-ml.so.580.105.08" {
		t.Errorf("libnvidia-ml.so.1 -> %q %v", link, err)
	}
	smi := extract(t, filepath.Join(b.root, release["nvidia-utils-580-server"].file))
	if fi, err := os.Stat(filepath.Join(smi, "usr/bin/nvidia-smi")); err != nil || fi.Mode().Perm()&0o111 == 0 {
		t.Errorf("nvidia-smi: %v %v", fi, err)
	}
}

// extract unpacks a .deb's files into a new directory.
func extract(t *testing.T, deb string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("dpkg-deb", "-x", deb, dir).CombinedOutput(); err != nil {
		t.Fatalf("dpkg-deb -x %s: %v: %s", deb, err, out)
	}
	return dir
}

// modinfo is a module's .modinfo section, as modinfo(8) reads it.
func modinfo(t *testing.T, ko string) string {
	t.Helper()
	f, err := elf.Open(ko)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := f.Section(".modinfo")
	if s == nil {
		t.Fatalf("%s has no .modinfo section", ko)
	}
	data, err := s.Data()
	if err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimRight(data, "\x00")) + "\x00"
}

// Ubuntu's own packages of main (the keyring, the kernel's meta packages
// and noble's systemd-cryptsetup) go into main's pool.
func TestUbuntuPackagesInMain(t *testing.T) {
	testutil.Tool(t, "dpkg-deb", "dpkg")
	dir := t.TempDir()
	b := &suiteBuilder{suite: "noble", root: filepath.Join(dir, "root"), work: filepath.Join(dir, "work"), kernel: "6.1.0-50-amd64",
		key: []byte("key"), debian: map[string]*debianPkg{"systemd": {name: "systemd", version: "252.39-1~deb12u1"}}}
	if err := os.MkdirAll(b.work, 0o755); err != nil {
		t.Fatal(err)
	}
	pkgs, err := b.ubuntuPackages()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pkgs {
		names = append(names, p.stanza.get("Package"))
		if p.component != "main" || !strings.HasPrefix(p.file, "pool/main/") {
			t.Errorf("%s in %s at %s", p.stanza.get("Package"), p.component, p.file)
		}
		if _, err := os.Stat(filepath.Join(b.root, p.file)); err != nil {
			t.Error(err)
		}
	}
	if got := strings.Join(names, " "); got != "ubuntu-keyring linux-image-generic linux-headers-generic systemd-cryptsetup" {
		t.Errorf("packages %s", got)
	}
}
