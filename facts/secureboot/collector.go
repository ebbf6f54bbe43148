// Package secureboot collects what Secure Boot rests on: the Authenticode
// signatures of the EFI binaries on the EFI system partition and of the
// kernels, with the trust anchor each signer's chain reaches, the
// appended signatures of out-of-tree kernel modules and the keys they are
// judged against, and on a live host the firmware's
// SecureBoot and SetupMode variables and the kernel's lockdown mode. An
// image and the host booted from it are read alike, so that the same
// checks judge both; the partition of a disk image is read as FAT32
// without mounting it.
//
// The folder is the whole domain: the facts (facts.go, the document's
// secure_boot key), the collector that fills them (Collect), and the
// checks that judge them (the Rego beside them).
package secureboot

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// Collect reads the boot chain. What it cannot read is recorded beside
// what it could, so each check can say which file it could not judge. It
// reads the target alone, needing no other collector's facts.
func Collect(ctx context.Context, env *collect.Env) (*facts.SecureBoot, error) {
	sb := &facts.SecureBoot{BootFiles: []facts.BootFile{}, Modules: []facts.KernelModule{}, TrustedKeys: []facts.TrustedKey{}}
	trees, where, err := findESP(env)
	sb.ESP = where
	if err != nil {
		sb.ESPError = err.Error()
	}
	var files []bootRead
	for _, tree := range trees {
		read, err := espBinaries(tree)
		files = append(files, read...)
		if err != nil {
			sb.ESPError = err.Error()
			break
		}
	}
	ks, err := kernels(env.FS)
	if err != nil {
		return nil, fmt.Errorf("listing the kernels in %s: %w", env.FS.Display("/boot"), err)
	}
	keys := trustedKeys(env)
	for _, k := range keys {
		sb.TrustedKeys = append(sb.TrustedKeys, k.fact)
	}
	sb.BootFiles, sb.BootAnchors = anchorBootFiles(append(files, ks...), firmwareDB(env.FS, env.Live), keys)
	if env.Live {
		sb.Modules, err = liveModules(ctx, env.FS, keys)
		sb.Firmware, sb.Lockdown = firmware(env.FS), lockdown(env.FS)
	} else {
		sb.Modules, err = offlineModules(ctx, env.FS, keys)
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		sb.ModulesError = err.Error()
	}
	return sb, nil
}

// trustedKeys are the image's DKMS certificate and, on a live host, the
// Machine Owner Keys. Offline the DKMS certificate counts as enrolled: it
// is the one the image has the operator enrol (mokutil --import), and the
// image records no other. Live it is enrolled only when MokListRT holds it.
func trustedKeys(env *collect.Env) []trustedKey {
	var keys []trustedKey
	if env.Live {
		mok, err := mokList(env.FS)
		if err != nil {
			keys = append(keys, trustedKey{fact: facts.TrustedKey{Source: "MokListRT", Enrolled: true, Error: err.Error()}})
		}
		keys = append(keys, mok...)
	}
	dkms, ok, err := readCertificate(env.FS, dkmsCert)
	switch {
	case err != nil:
		keys = append(keys, trustedKey{fact: facts.TrustedKey{Source: env.FS.Display(dkmsCert), Error: err.Error()}})
	case ok:
		dkms.fact.Enrolled = !env.Live || slices.ContainsFunc(keys, func(k trustedKey) bool {
			return k.fact.Enrolled && k.fact.SHA256 == dkms.fact.SHA256
		})
		keys = append(keys, dkms)
	}
	return keys
}

// offlineModules checks every out-of-tree module of every kernel in the
// image.
func offlineModules(ctx context.Context, fsys sysroot.FS, keys []trustedKey) ([]facts.KernelModule, error) {
	byRelease, err := moduleFiles(fsys)
	out := []facts.KernelModule{}
	if err != nil {
		return out, err
	}
	for _, rel := range slices.Sorted(maps.Keys(byRelease)) {
		for _, file := range byRelease[rel] {
			if ctx.Err() != nil {
				return out, ctx.Err()
			}
			out = append(out, checkModule(fsys, file, rel, keys))
		}
	}
	return out, nil
}

// liveModules checks each loaded module the kernel marks out of tree
// (taint O), reading its file where the running release's modules.dep
// puts it.
func liveModules(ctx context.Context, fsys sysroot.FS, keys []trustedKey) ([]facts.KernelModule, error) {
	out := []facts.KernelModule{}
	data, err := fsys.ReadFileLimit("/proc/modules", maxProcModules)
	if err != nil {
		return out, fmt.Errorf("reading the loaded modules: %w", err)
	}
	relData, err := fsys.ReadFileLimit("/proc/sys/kernel/osrelease", 256)
	if err != nil {
		return out, fmt.Errorf("reading the running kernel's release: %w", err)
	}
	rel := strings.TrimSpace(string(relData))
	if !validName(rel) {
		return out, fmt.Errorf("the running kernel's release %q is not a directory name", rel)
	}
	dir := "/lib/modules/" + rel
	depData, err := fsys.ReadFileLimit(dir+"/modules.dep", maxProcModules)
	if err != nil && !sysroot.IsNotExist(err) {
		return out, fmt.Errorf("reading %s: %w", fsys.Display(dir+"/modules.dep"), err)
	}
	dep := parseModulesDep(depData)
	for _, m := range parseProcModules(data) {
		if !strings.Contains(m.taint, "O") {
			continue
		}
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		if len(out) >= maxModules {
			return out, fmt.Errorf("more than %d out-of-tree modules are loaded", maxModules)
		}
		km := facts.KernelModule{Name: m.name, Kernel: rel}
		if file, ok := dep[m.name]; ok {
			km = checkModule(fsys, dir+"/"+file, rel, keys)
			km.Name = m.name
		} else {
			km.Error = fmt.Sprintf("%s does not list %s, so its file and signature were not read", fsys.Display(dir+"/modules.dep"), m.name)
		}
		km.Loaded, km.Taint = true, m.taint
		out = append(out, km)
	}
	return out, nil
}
