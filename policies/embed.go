// Package policies holds gpuhost's default policy pack: one Rego v1 package
// per check under <domain>/<name>.rego, each with its tests beside it, plus the
// default parameters and their JSON Schema. A domain whose folder under
// facts/ holds its facts and collector holds its checks there too; the pack
// mounts them at the domain's folder name (Domains).
package policies

import (
	"embed"
	"io/fs"

	"github.com/gpuhost/gpuhost/facts"
)

// params.default.yaml is written from params.schema.json, each parameter's
// default under its description:
//
//go:generate go run ./internal/paramsgen

// FS is the default pack as shipped in the binary, one tree: every .rego
// file (tests included: the engine drops *_test.rego before it compiles
// checks, and `gpuhost policy test` needs them), params.default.yaml and
// params.schema.json, with each of Domains at its folder name.
var FS fs.FS = tree{own: own, mounts: mounts()}

// own is the part of the pack this folder holds: the checks that span
// domains (drift, key, pin), lib, and the parameters.
//
//go:embed */*.rego params.default.yaml params.schema.json compliance/*/profile.yaml
var own embed.FS

// Domain is a folder of the pack that sits beside its domain's facts and
// collector.
type Domain struct {
	// Folder is the folder's name in the pack, which its checks' ids and
	// files are named by (sb: GH-SB-*, sb/lockdown.rego).
	Folder string
	// Dir is where the Rego is in the repository, for the tools that run
	// on a checkout (opa test, regal).
	Dir string
	// FS holds the folder's .rego files.
	FS fs.FS
}

// Domains are the pack's folders that sit beside their collector.
var Domains = []Domain{
	{Folder: "audit", Dir: "facts/audit/audit", FS: domain("audit/audit")},
	{Folder: "cgroup", Dir: "facts/osinfo/cgroup", FS: domain("osinfo/cgroup")},
	{Folder: "enc", Dir: "facts/encryption/enc", FS: domain("encryption/enc")},
	{Folder: "fs", Dir: "facts/files/fs", FS: domain("files/fs")},
	{Folder: "gpu", Dir: "facts/gpu/gpu", FS: domain("gpu/gpu")},
	{Folder: "iam", Dir: "facts/access/iam", FS: domain("access/iam")},
	{Folder: "kernel", Dir: "facts/osinfo/kernel", FS: domain("osinfo/kernel")},
	{Folder: "net", Dir: "facts/network/net", FS: domain("network/net")},
	{Folder: "pkg", Dir: "facts/packages/pkg", FS: domain("packages/pkg")},
	{Folder: "runtime", Dir: "facts/runtime/runtime", FS: domain("runtime/runtime")},
	{Folder: "sb", Dir: "facts/secureboot/sb", FS: domain("secureboot/sb")},
	{Folder: "sc", Dir: "facts/packages/sc", FS: domain("packages/sc")},
	{Folder: "ssh", Dir: "facts/ssh/ssh", FS: domain("ssh/ssh")},
	{Folder: "tls", Dir: "facts/tls/tls", FS: domain("tls/tls")},
}

// domain is the Rego in dir, a domain's pack folder under facts/.
func domain(dir string) fs.FS {
	sub, err := fs.Sub(facts.Rego, dir)
	if err != nil {
		// fs.Sub fails only on an invalid path, and dir is a constant.
		panic(err)
	}
	return sub
}

func mounts() map[string]fs.FS {
	m := make(map[string]fs.FS, len(Domains))
	for _, d := range Domains {
		m[d.Folder] = d.FS
	}
	return m
}

// DefaultParamsFile and ParamsSchemaFile name the two data files inside FS.
const (
	DefaultParamsFile = "params.default.yaml"
	ParamsSchemaFile  = "params.schema.json"
)

// DefaultParams returns the bytes of params.default.yaml, the parameters the
// engine loads as data.gpuhost.params when the user gives none.
func DefaultParams() ([]byte, error) {
	return fs.ReadFile(FS, DefaultParamsFile)
}

// ParamsSchema returns the bytes of params.schema.json (JSON Schema draft
// 2020-12) that a params file must satisfy.
func ParamsSchema() ([]byte, error) {
	return fs.ReadFile(FS, ParamsSchemaFile)
}
