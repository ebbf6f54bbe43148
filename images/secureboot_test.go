package images

// The Secure Boot half of the boot test: the key the bake leaves the
// certificate of as the image's DKMS certificate, the stand-in module
// built against the image's kernel and signed with it as DKMS signs, and
// what a boot under Secure Boot, and one under BIOS, must show of them.

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpuhost/gpuhost/internal/testutil"
	"github.com/gpuhost/gpuhost/reports"
)

// The stand-in modules: one signed as DKMS signs, one left unsigned.
const (
	signedModule   = "gpuhost_sbtest"
	unsignedModule = "gpuhost_sbtest_unsigned"
	mokCN          = "gpuhost e2e DKMS signing key"
)

// moduleKey is the module signing key the bake is given (dkms
// signing_key and signing_certificate), whose certificate the image keeps
// at /var/lib/dkms/mok.pub and the Secure Boot boot enrols as its MOK.
type moduleKey struct {
	key, cert string
	der       []byte
	signer    *rsa.PrivateKey
}

func newModuleKey(t *testing.T) *moduleKey {
	t.Helper()
	key, cert := testutil.SigningKey(t, t.TempDir(), mokCN)
	k := &moduleKey{key: key, cert: cert}
	for _, f := range []struct {
		file string
		into func([]byte) error
	}{
		{cert, func(b []byte) error { k.der = b; _, err := x509.ParseCertificate(b); return err }},
		{key, func(b []byte) error {
			p, err := x509.ParsePKCS8PrivateKey(b)
			k.signer, _ = p.(*rsa.PrivateKey)
			return err
		}},
	} {
		b, err := os.ReadFile(f.file)
		if err != nil {
			t.Fatal(err)
		}
		blk, _ := pem.Decode(b)
		if blk == nil {
			t.Fatalf("%s holds no PEM", f.file)
		}
		if err := f.into(blk.Bytes); err != nil {
			t.Fatalf("%s: %v", f.file, err)
		}
	}
	return k
}

// standInModules builds the two stand-in modules against the headers of
// the image's kernel, with kbuild as DKMS runs it, signs one with the
// kernel's sign-file as DKMS does, and returns them as selftest inputs:
// each module-NAME.ko with the detached signature by the same key that
// gpuhost-selftest-modules wants before it hands a module to the kernel.
func standInModules(t *testing.T, release string, k *moduleKey) map[string][]byte {
	t.Helper()
	headers := filepath.Join("/usr/src", "linux-headers-"+release)
	if _, err := os.Stat(filepath.Join(headers, "Makefile")); err != nil {
		t.Fatalf("the image's kernel headers: %v (Debian package linux-headers-%s; make deps installs it)", err, release)
	}
	dir := t.TempDir()
	src := "#include <linux/init.h>\n#include <linux/module.h>\n\n" +
		"static int __init standin_init(void) { return 0; }\nstatic void __exit standin_exit(void) {}\n" +
		"module_init(standin_init);\nmodule_exit(standin_exit);\nMODULE_LICENSE(\"GPL\");\n" +
		"MODULE_DESCRIPTION(\"gpuhost's stand-in for a DKMS module in the Secure Boot boot test\");\n"
	files := map[string]string{"Kbuild": fmt.Sprintf("obj-m := %s.o %s.o\n", signedModule, unsignedModule)}
	for _, m := range []string{signedModule, unsignedModule} {
		files[m+".c"] = src
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Run(t, 5*time.Minute, testutil.Tool(t, "make", "make"), "-s", "-C", headers, "M="+dir, "modules")
	testutil.SignModule(t, k.key, k.cert, filepath.Join(dir, signedModule+".ko"))
	inputs := map[string][]byte{}
	for _, m := range []string{signedModule, unsignedModule} {
		ko, err := os.ReadFile(filepath.Join(dir, m+".ko"))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(ko)
		sig, err := rsa.SignPKCS1v15(rand.Reader, k.signer, crypto.SHA256, sum[:])
		if err != nil {
			t.Fatal(err)
		}
		inputs["module-"+m+".ko"], inputs["module-"+m+".ko.sig"] = ko, sig
	}
	return inputs
}

// only keeps the inputs of the named modules.
func only(inputs map[string][]byte, modules ...string) map[string][]byte {
	out := map[string][]byte{}
	for name, b := range inputs {
		for _, m := range modules {
			if strings.HasPrefix(name, "module-"+m+".ko") {
				out[name] = b
			}
		}
	}
	return out
}

// forged is the BIOS host's inputs: the unsigned stand-in with its good
// detached signature, and the signed one with a detached signature that
// does not verify, which gpuhost-selftest-modules must not load.
func forged(inputs map[string][]byte) map[string][]byte {
	out := only(inputs, unsignedModule)
	out["module-"+signedModule+".ko"] = inputs["module-"+signedModule+".ko"]
	sig := slices.Clone(inputs["module-"+signedModule+".ko.sig"])
	sig[len(sig)/2] ^= 0xff
	out["module-"+signedModule+".ko.sig"] = sig
	return out
}

// assertSecureBoot checks a boot under Secure Boot from what its selftest
// read inside the guest: the firmware enforced it, the kernel said so and
// locked itself down, shim handed it the image's MOK, the system reached
// multi-user, the signed stand-in loaded and the unsigned one was refused;
// and the live GH-SB checks of all that pass.
func assertSecureBoot(t *testing.T, run *bootRun) {
	t.Helper()
	r := func(name string) string { return strings.TrimSpace(string(run.reports[name])) }
	checks := []struct{ file, want, what string }{
		{"sb-state.txt", "SecureBoot enabled", "mokutil --sb-state"},
		{"kernel-secureboot.txt", "secureboot: Secure boot enabled", "the kernel's log"},
		{"mok-enrolled.txt", "CN=" + mokCN, "mokutil --list-enrolled"},
		{"modules.txt", signedModule + ": loaded", "the stand-in signed with the image's key"},
		{"modules.txt", unsignedModule + ": refused by the kernel", "the unsigned stand-in"},
	}
	for _, c := range checks {
		if !strings.Contains(r(c.file), c.want) {
			t.Errorf("%s: %s (%s) lacks %q:\n%s", run.name, c.what, c.file, c.want, r(c.file))
		}
	}
	if l := r("lockdown.txt"); !strings.Contains(l, "[integrity]") && !strings.Contains(l, "[confidentiality]") {
		t.Errorf("%s: lockdown is %q, want integrity or confidentiality", run.name, l)
	}
	if units := parseUnits(r("units.txt")); units["multi-user.target"] != "active" {
		t.Errorf("%s: multi-user.target is %q", run.name, units["multi-user.target"])
	}
	mods := procModules(r("proc-modules.txt"))
	if taint, ok := mods[signedModule]; !ok || strings.Contains(taint, "E") {
		t.Errorf("%s: /proc/modules has %s loaded %v with taint %q; want it loaded, verified (no E)", run.name, signedModule, ok, taint)
	}
	if _, ok := mods[unsignedModule]; ok {
		t.Errorf("%s: the unsigned %s is loaded under Secure Boot", run.name, unsignedModule)
	}
	for _, id := range []string{"GH-SB-001", "GH-SB-004", "GH-SB-005", "GH-SB-006", "GH-SB-007"} {
		if res, ok := result(run.scan, id); !ok || res.Status != reports.StatusPass {
			t.Errorf("%s: live %s is %q: %q; want pass", run.name, id, res.Status, res.Messages)
		}
	}
	t.Logf("%s: Secure Boot: %s; lockdown %s; %s", run.name, r("sb-state.txt"), r("lockdown.txt"), strings.ReplaceAll(r("modules.txt"), "\n", "; "))
}

// assertNotSecureBoot checks a BIOS boot: no lockdown, so the unsigned
// stand-in loaded, tainting the kernel; and the live scan says so, failing
// the GH-SB checks of the firmware, lockdown and the loaded module, which
// it names.
func assertNotSecureBoot(t *testing.T, run *bootRun) {
	t.Helper()
	r := func(name string) string { return strings.TrimSpace(string(run.reports[name])) }
	if !strings.Contains(r("modules.txt"), unsignedModule+": loaded") {
		t.Errorf("%s: the unsigned stand-in did not load without lockdown:\n%s", run.name, r("modules.txt"))
	}
	mods := procModules(r("proc-modules.txt"))
	if taint := mods[unsignedModule]; !strings.Contains(taint, "E") {
		t.Errorf("%s: %s's taint is %q, want E (unverified)", run.name, unsignedModule, taint)
	}
	// The selftest disk's own gate: a module without a good detached
	// signature by the image's key is not handed to the kernel at all.
	if _, ok := mods[signedModule]; ok || !strings.Contains(r("modules.txt"), signedModule+": not loaded: no detached signature") {
		t.Errorf("%s: %s, whose detached signature does not verify, was loaded (%v) or not reported:\n%s", run.name, signedModule, ok, r("modules.txt"))
	}
	if l := r("lockdown.txt"); !strings.Contains(l, "[none]") {
		t.Errorf("%s: lockdown is %q, want none", run.name, l)
	}
	for id, want := range map[string]string{
		"GH-SB-004": "without UEFI",
		"GH-SB-005": "not locked down",
		"GH-SB-006": "module " + unsignedModule + " was loaded without a signature",
	} {
		res, _ := result(run.scan, id)
		if res.Status != reports.StatusFail || !strings.Contains(strings.Join(res.Messages, "; "), want) {
			t.Errorf("%s: live %s is %q: %q; want a failure saying %q", run.name, id, res.Status, res.Messages, want)
		}
	}
}

// procModules maps each module of /proc/modules to its taint flags.
func procModules(s string) map[string]string {
	out := map[string]string{}
	for _, l := range strings.Split(s, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		taint := ""
		if last := f[len(f)-1]; strings.HasPrefix(last, "(") {
			taint = strings.Trim(last, "()")
		}
		out[f[0]] = taint
	}
	return out
}

func result(r reports.Report, id string) (reports.Result, bool) {
	i := slices.IndexFunc(r.Results, func(x reports.Result) bool { return x.ID == id })
	if i < 0 {
		return reports.Result{}, false
	}
	return r.Results[i], true
}

// sbAgreement logs the GH-SB rows of the agreement table, offline against
// live, and requires the boot chain's check among those both evaluated.
func sbAgreement(t *testing.T, offline, live reports.Report, name string) {
	t.Helper()
	var b strings.Builder
	both := false
	for _, l := range slices.SortedFunc(slices.Values(live.Results), func(a, b reports.Result) int { return strings.Compare(a.ID, b.ID) }) {
		if !strings.HasPrefix(l.ID, "GH-SB-") {
			continue
		}
		o, _ := result(offline, l.ID)
		fmt.Fprintf(&b, "%s\toffline %s\tlive %s\n", l.ID, o.Status, l.Status)
		if l.ID == "GH-SB-001" && o.Status == reports.StatusPass && l.Status == reports.StatusPass {
			both = true
		}
	}
	t.Logf("%s: the GH-SB checks, offline gate and live scan:\n%s", name, b.String())
	if !both {
		t.Errorf("%s: GH-SB-001 (the boot chain's signatures) is not passed both offline and live", name)
	}
}
