package secureboot

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect/textfile"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// What a live host says, read through its /sys and /proc.
const (
	efiDir     = "/sys/firmware/efi"
	efivars    = "/sys/firmware/efi/efivars"
	globalVar  = "8be4df61-93ca-11d2-aa0d-00e098032b8c" // EFI_GLOBAL_VARIABLE
	shimVar    = "605dab50-e046-4300-abb6-3dd810dd8b23" // shim's vendor GUID
	mokVars    = "/sys/firmware/efi/mok-variables/MokListRT"
	lockdownFS = "/sys/kernel/security/lockdown"
	// maxEFIVar bounds an EFI variable read whole; MokListRT holds a few
	// certificates.
	maxEFIVar = 1 << 20
	// maxProcModules bounds /proc/modules and modules.dep.
	maxProcModules = 16 << 20
)

// firmware reads the SecureBoot and SetupMode variables: four bytes of
// attributes, then one byte, 1 for on.
func firmware(fsys sysroot.FS) *facts.Firmware {
	fw := &facts.Firmware{}
	if _, err := fsys.Stat(efiDir); err != nil {
		if !sysroot.IsNotExist(err) {
			fw.Error = err.Error()
		}
		return fw
	}
	fw.EFI = true
	if entries, err := fsys.ReadDir(efivars); err != nil || len(entries) == 0 {
		fw.Error = fmt.Sprintf("efivarfs is not mounted at %s, so the Secure Boot variables cannot be read", fsys.Display(efivars))
		return fw
	}
	var errs []string
	for _, v := range []struct {
		name string
		out  **bool
	}{{"SecureBoot", &fw.SecureBoot}, {"SetupMode", &fw.SetupMode}} {
		on, err := boolVar(fsys, efivars+"/"+v.name+"-"+globalVar)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		*v.out = &on
	}
	fw.Error = strings.Join(errs, "; ")
	return fw
}

// boolVar reads a one-byte EFI variable; an absent one is off, as UEFI
// firmware without Secure Boot support has neither variable.
func boolVar(fsys sysroot.FS, name string) (bool, error) {
	data, err := fsys.ReadFileLimit(name, 64)
	if sysroot.IsNotExist(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if len(data) != 5 || data[4] > 1 {
		return false, fmt.Errorf("%s: %d bytes (want 4 of attributes and 1 of value, 0 or 1)", fsys.Display(name), len(data))
	}
	return data[4] == 1, nil
}

// lockdown reads the kernel's lockdown mode, the word in brackets.
func lockdown(fsys sysroot.FS) *facts.Lockdown {
	l := &facts.Lockdown{Source: lockdownFS}
	data, err := fsys.ReadFileLimit(lockdownFS, 4096)
	switch {
	case sysroot.IsNotExist(err):
		// securityfs mounted and no lockdown file: the kernel has no
		// lockdown LSM, which locks nothing down.
		if entries, derr := fsys.ReadDir("/sys/kernel/security"); derr == nil && len(entries) > 0 {
			l.Mode = "none"
			return l
		}
		l.Error = "securityfs is not mounted at /sys/kernel/security, so the lockdown mode cannot be read"
		return l
	case err != nil:
		l.Error = err.Error()
		return l
	}
	for _, w := range strings.Fields(string(data)) {
		if m, ok := strings.CutPrefix(w, "["); ok {
			if m, ok = strings.CutSuffix(m, "]"); ok && slices.Contains([]string{"none", "integrity", "confidentiality"}, m) {
				l.Mode = m
				return l
			}
		}
	}
	l.Error = fmt.Sprintf("%s names no mode in brackets: %q", fsys.Display(lockdownFS), textfile.Truncate(string(data), 80))
	return l
}

// mokList reads the Machine Owner Keys shim hands the kernel: the kernel's
// own copy under mok-variables, which holds what the variable may be too
// small for, else the MokListRT variable.
func mokList(fsys sysroot.FS) ([]trustedKey, error) {
	data, err := fsys.ReadFileLimit(mokVars, maxEFIVar)
	source := "MokListRT"
	if sysroot.IsNotExist(err) {
		data, err = fsys.ReadFileLimit(efivars+"/MokListRT-"+shimVar, maxEFIVar)
		if err == nil && len(data) >= 4 {
			data = data[4:]
		}
	}
	if sysroot.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// Store names a boot anchor's store; as module keys these carry none
	// (anchorBootFiles marks them mok where they anchor boot files).
	keys, err := certificateList(data, source, "")
	if err != nil {
		return nil, fmt.Errorf("parsing MokListRT: %w", err)
	}
	return keys, nil
}

// loadedModule is a line of /proc/modules: the module's name and its
// taint letters.
type loadedModule struct{ name, taint string }

// parseProcModules reads /proc/modules: name, size, users, dependents,
// state, address and, for a tainted module, its letters in parentheses.
func parseProcModules(data []byte) []loadedModule {
	var out []loadedModule
	for _, l := range textfile.Lines(data) {
		f := strings.Fields(l)
		if len(f) < 6 || !validName(f[0]) {
			continue
		}
		m := loadedModule{name: f[0]}
		if len(f) > 6 {
			m.taint = strings.Trim(f[6], "()")
		}
		out = append(out, m)
	}
	return out
}

// parseModulesDep maps each module's name to its file, relative to the
// release's directory, from modules.dep ("updates/dkms/nvidia.ko: ...").
func parseModulesDep(data []byte) map[string]string {
	out := map[string]string{}
	for _, l := range textfile.Lines(data) {
		file, _, ok := strings.Cut(l, ":")
		if !ok || strings.HasPrefix(file, "/") || strings.Contains(file, "..") {
			continue
		}
		if n := moduleName(file[strings.LastIndex(file, "/")+1:]); n != "" {
			out[n] = file
		}
	}
	return out
}
