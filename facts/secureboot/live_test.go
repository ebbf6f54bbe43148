package secureboot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/collecttest"
	"github.com/gpuhost/gpuhost/internal/testutil"
)

// efiVar is an efivarfs file: four bytes of attributes (non-volatile,
// boot service and runtime access), then the value.
func efiVar(value ...byte) []byte { return append([]byte{0x07, 0, 0, 0}, value...) }

// mokListRT writes the certificate as shim's MokListRT holds it, an
// EFI_SIGNATURE_LIST made by efitools' cert-to-efi-sig-list.
func mokListRT(t *testing.T, cert string) []byte {
	t.Helper()
	esl := filepath.Join(t.TempDir(), "mok.esl")
	testutil.Run(t, time.Minute, testutil.Tool(t, "cert-to-efi-sig-list", "efitools"), "-g", shimVar, cert, esl)
	data, err := os.ReadFile(esl)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// liveHost is a host booted with Secure Boot on: its MOK enrolled, the
// NVIDIA modules DKMS built and signed with it loaded and marked out of
// tree, one of them by a key the host does not trust.
func liveHost(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	keys := t.TempDir()
	key, cert := testKey(t, keys, "DKMS module signing key")
	otherKey, otherCert := testKey(t, keys, "someone else")
	mods := filepath.Join(root, "lib/modules", testRelease, "updates/dkms")
	fakeModule(t, filepath.Join(mods, "nvidia.ko"), 64<<10)
	signModule(t, key, cert, filepath.Join(mods, "nvidia.ko"))
	fakeModule(t, filepath.Join(mods, "nvidia-uvm.ko"), 64<<10)
	signModule(t, otherKey, otherCert, filepath.Join(mods, "nvidia-uvm.ko"))
	compress(t, filepath.Join(mods, "nvidia-uvm.ko"), "xz", "xz-utils", "--check=crc32", "--lzma2=dict=1MiB")
	copyFile(t, cert, filepath.Join(root, "var/lib/dkms/mok.pub"))
	collecttest.WriteTree(t, root, map[string]any{
		"sys/firmware/efi/efivars/SecureBoot-" + globalVar: efiVar(1),
		"sys/firmware/efi/efivars/SetupMode-" + globalVar:  efiVar(0),
		"sys/firmware/efi/efivars/MokListRT-" + shimVar:    efiVar(mokListRT(t, cert)...),
		"sys/kernel/security/lockdown":                     "none [integrity] confidentiality\n",
		"proc/sys/kernel/osrelease":                        testRelease + "\n",
		"proc/modules": "nvidia_uvm 1990656 0 - Live 0xffffffffc1a00000 (OE)\n" +
			"nvidia 56836096 1 nvidia_uvm, Live 0xffffffffc0000000 (POE)\n" +
			"ghost 16384 0 - Live 0xffffffffc0800000 (O)\n" +
			"ext4 1003520 1 - Live 0xffffffffc0400000\n",
		"lib/modules/" + testRelease + "/modules.dep": "updates/dkms/nvidia.ko:\nupdates/dkms/nvidia-uvm.ko.xz: updates/dkms/nvidia.ko\nkernel/fs/ext4/ext4.ko:\n",
	})
	return root
}

// A live host's Secure Boot state, lockdown mode, enrolled keys and loaded
// out-of-tree modules are read in the kernel's and firmware's formats.
func TestLiveHost(t *testing.T) {
	root := liveHost(t)
	sb := collectFacts(t, collecttest.NewEnv(t, root, true))
	if fw := sb.Firmware; fw == nil || !fw.EFI || fw.SecureBoot == nil || !*fw.SecureBoot || fw.SetupMode == nil || *fw.SetupMode || fw.Error != "" {
		t.Errorf("firmware %+v", sb.Firmware)
	}
	if l := sb.Lockdown; l == nil || l.Mode != "integrity" || l.Error != "" {
		t.Errorf("lockdown %+v", sb.Lockdown)
	}
	if len(sb.TrustedKeys) != 2 || sb.TrustedKeys[0].Source != "MokListRT" || sb.TrustedKeys[1].Source != dkmsCert ||
		!sb.TrustedKeys[0].Enrolled || !sb.TrustedKeys[1].Enrolled || sb.TrustedKeys[0].SHA256 != sb.TrustedKeys[1].SHA256 {
		t.Errorf("trusted keys %+v, want the MOK and the DKMS certificate, the same and enrolled", sb.TrustedKeys)
	}
	if sb.ModulesError != "" || len(sb.Modules) != 3 {
		t.Fatalf("modules %+v (%q), want the three out of tree", sb.Modules, sb.ModulesError)
	}
	mods := byName(sb.Modules)
	if m := mods["nvidia"]; !m.Loaded || m.Taint != "POE" || m.VerifiedBy != "MokListRT" || m.File != "/lib/modules/"+testRelease+"/updates/dkms/nvidia.ko" {
		t.Errorf("nvidia: %+v", m)
	}
	if m := mods["nvidia_uvm"]; m.Taint != "OE" || m.VerifiedBy != "" || m.Signer != "someone else" || !strings.Contains(m.Error, "none of the trusted keys") {
		t.Errorf("nvidia_uvm: %+v", m)
	}
	if m := mods["ghost"]; m.File != "" || !strings.Contains(m.Error, "does not list ghost") {
		t.Errorf("ghost: %+v", m)
	}
}

// The DKMS certificate counts as enrolled on a host only when MokListRT
// holds it.
func TestLiveDKMSCertificateNotEnrolled(t *testing.T) {
	root := liveHost(t)
	_, other := testKey(t, t.TempDir(), "not enrolled")
	copyFile(t, other, filepath.Join(root, "var/lib/dkms/mok.pub"))
	sb := collectFacts(t, collecttest.NewEnv(t, root, true))
	keys := sb.TrustedKeys
	if len(keys) != 2 || keys[1].Source != dkmsCert || keys[1].Enrolled || keys[1].Subject != "CN=not enrolled" {
		t.Errorf("trusted keys %+v", keys)
	}
}

// A host that booted without UEFI, or whose efivarfs or securityfs is not
// mounted, says so rather than guess.
func TestLiveFirmwareAndLockdownStates(t *testing.T) {
	for name, tc := range map[string]struct {
		tree     map[string]any
		fw       facts.Firmware
		lockdown facts.Lockdown
	}{
		"BIOS boot, no lockdown LSM": {
			map[string]any{"sys/kernel/security/apparmor/": ""},
			facts.Firmware{EFI: false}, facts.Lockdown{Mode: "none", Source: lockdownFS},
		},
		"efivarfs not mounted": {
			map[string]any{"sys/firmware/efi/efivars/": "", "sys/kernel/security/": ""},
			facts.Firmware{EFI: true, Error: "efivarfs is not mounted at /sys/firmware/efi/efivars, so the Secure Boot variables cannot be read"},
			facts.Lockdown{Source: lockdownFS, Error: "securityfs is not mounted at /sys/kernel/security, so the lockdown mode cannot be read"},
		},
		"no Secure Boot support, lockdown none": {
			map[string]any{"sys/firmware/efi/efivars/BootOrder-" + globalVar: efiVar(0, 0), "sys/kernel/security/lockdown": "[none] integrity confidentiality\n"},
			facts.Firmware{EFI: true, SecureBoot: new(bool), SetupMode: new(bool)}, facts.Lockdown{Mode: "none", Source: lockdownFS},
		},
		"malformed variable": {
			map[string]any{"sys/firmware/efi/efivars/SecureBoot-" + globalVar: efiVar(1, 1), "sys/firmware/efi/efivars/SetupMode-" + globalVar: efiVar(1),
				"sys/kernel/security/lockdown": "integrity\n"},
			facts.Firmware{EFI: true, SetupMode: ptrTo(true),
				Error: "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c: 6 bytes (want 4 of attributes and 1 of value, 0 or 1)"},
			facts.Lockdown{Source: lockdownFS, Error: `/sys/kernel/security/lockdown names no mode in brackets: "integrity\n"`},
		},
	} {
		root := t.TempDir()
		collecttest.WriteTree(t, root, tc.tree)
		if fw := firmware(collecttest.NewEnv(t, root, true).FS); !sameFirmware(*fw, tc.fw) {
			t.Errorf("%s: firmware %+v, want %+v", name, *fw, tc.fw)
		}
		if l := lockdown(collecttest.NewEnv(t, root, true).FS); *l != tc.lockdown {
			t.Errorf("%s: lockdown %+v, want %+v", name, *l, tc.lockdown)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }

func sameFirmware(a, b facts.Firmware) bool {
	eq := func(x, y *bool) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.EFI == b.EFI && a.Error == b.Error && eq(a.SecureBoot, b.SecureBoot) && eq(a.SetupMode, b.SetupMode)
}

// EFI_SIGNATURE_LISTs are read as cert-to-efi-sig-list writes them, and
// their sizes held to what the data holds.
func TestParseSignatureLists(t *testing.T) {
	_, cert := testKey(t, t.TempDir(), "mok")
	esl := mokListRT(t, cert)
	two := append(append([]byte(nil), esl...), esl...)
	entries, err := parseSignatureLists(two)
	if err != nil || len(entries) != 2 || entries[0].typ != certX509 || entries[0].owner != shimVar {
		t.Fatalf("%+v, %v", entries, err)
	}
	der := testutil.Run(t, time.Minute, "openssl", "x509", "-in", cert, "-outform", "DER")
	if string(entries[1].data) != der {
		t.Error("the entry is not the certificate's DER")
	}
	for name, edit := range map[string]func([]byte) []byte{
		"cut short":           func(b []byte) []byte { return b[:len(b)-1] },
		"header cut short":    func(b []byte) []byte { return b[:20] },
		"list past the end":   func(b []byte) []byte { b[16]++; return b },
		"signature too big":   func(b []byte) []byte { b[24], b[25] = 0xff, 0xff; return b },
		"signature too small": func(b []byte) []byte { b[24], b[25], b[26], b[27] = 8, 0, 0, 0; return b },
	} {
		if _, err := parseSignatureLists(edit(append([]byte(nil), esl...))); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

// A host whose fstab mounts the ESP at /boot/efi, with nothing mounted
// there, is not judged on the empty directory: the ESP is an error that
// says why, so GH-SB-001 reports that it could not run. The same tree
// offline, or a host whose fstab names no ESP, reads the directory.
func TestLiveESPNotMounted(t *testing.T) {
	root := liveHost(t)
	collecttest.WriteTree(t, root, map[string]any{
		"etc/fstab":  "/dev/mapper/root / ext4 defaults 0 1\nUUID=0D1C-5B7E /boot/efi vfat umask=0077,nofail 0 2\n",
		"boot/efi/":  nil,
		"boot/grub/": nil,
	})
	sb := collectFacts(t, collecttest.NewEnv(t, root, true))
	if sb.ESP != "/boot/efi" || !strings.Contains(sb.ESPError, "mounts UUID=0D1C-5B7E at /boot/efi (line 2), and nothing is mounted there") {
		t.Errorf("an unmounted ESP: %q %q", sb.ESP, sb.ESPError)
	}
	sb = collectFacts(t, collecttest.NewEnv(t, root, false))
	if sb.ESP != "/boot/efi" || sb.ESPError != "" {
		t.Errorf("the tree offline: %q %q", sb.ESP, sb.ESPError)
	}
	collecttest.WriteTree(t, root, map[string]any{"etc/fstab": "/dev/mapper/root / ext4 defaults 0 1\n"})
	sb = collectFacts(t, collecttest.NewEnv(t, root, true))
	if sb.ESP != "/boot/efi" || sb.ESPError != "" {
		t.Errorf("no ESP in fstab: %q %q", sb.ESP, sb.ESPError)
	}
}

// A mount point is told by its device: this machine's /proc is one, its
// /etc is not.
func TestMountPointByDevice(t *testing.T) {
	st := func(name string) os.FileInfo {
		fi, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		return fi
	}
	if deviceOf(st("/proc")) == deviceOf(st("/")) {
		t.Error("/proc has the device of /")
	}
	if deviceOf(st("/etc")) != deviceOf(st("/")) {
		t.Skip("this machine mounts /etc apart from /")
	}
}
