// Package policies holds gpuhost's default policy pack: one Rego v1 package
// per check under <domain>/<name>.rego, each with its tests beside it, plus the
// default parameters and their JSON Schema. A domain whose folder under
// facts/ holds its facts and collector holds its checks there too; the pack
// mounts them at the domain's folder name (Domains).
package policies

import (
	"embed"
	"io/fs"

	"github.com/gpuhost/gpuhost/facts/access"
	"github.com/gpuhost/gpuhost/facts/audit"
	"github.com/gpuhost/gpuhost/facts/encryption"
	"github.com/gpuhost/gpuhost/facts/gpu"
	"github.com/gpuhost/gpuhost/facts/network"
	"github.com/gpuhost/gpuhost/facts/osinfo"
	"github.com/gpuhost/gpuhost/facts/packages"
	"github.com/gpuhost/gpuhost/facts/runtime"
	"github.com/gpuhost/gpuhost/facts/secureboot"
	"github.com/gpuhost/gpuhost/facts/ssh"
	"github.com/gpuhost/gpuhost/facts/tls"
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
//go:embed */*.rego params.default.yaml params.schema.json
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
	{Folder: "audit", Dir: "facts/audit", FS: audit.Policy},
	{Folder: "cgroup", Dir: "facts/osinfo", FS: osinfo.Policy},
	{Folder: "enc", Dir: "facts/encryption", FS: encryption.Policy},
	{Folder: "gpu", Dir: "facts/gpu", FS: gpu.Policy},
	{Folder: "iam", Dir: "facts/access", FS: access.Policy},
	{Folder: "net", Dir: "facts/network", FS: network.Policy},
	{Folder: "runtime", Dir: "facts/runtime", FS: runtime.Policy},
	{Folder: "sb", Dir: "facts/secureboot", FS: secureboot.Policy},
	{Folder: "sc", Dir: "facts/packages", FS: packages.Policy},
	{Folder: "ssh", Dir: "facts/ssh", FS: ssh.Policy},
	{Folder: "tls", Dir: "facts/tls", FS: tls.Policy},
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
