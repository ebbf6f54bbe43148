// Package facts defines gpuhost.facts/v1, the one document that collectors fill
// and policies read. Field names are the contract with the Rego pack: renaming
// a JSON tag is a breaking change to every policy and every saved facts file.
//
// This file holds the document's frame; each domain's facts have a file of
// their own (ssh.go, tls.go, network.go, encryption.go, gpu.go, runtime.go,
// audit.go, access.go, packages.go, osinfo.go, secureboot.go), named like the collector
// folder under checks/ that fills them and the policy folder that reads them.
package facts

import "time"

// Schema is the value of Facts.Schema for documents this package writes.
const Schema = "gpuhost.facts/v1"

// Target kinds, as they appear in Target.Kind and in policy METADATA targets.
const (
	KindRootfs = "rootfs"
	KindImage  = "image"
	KindHost   = "host"
	KindFacts  = "facts"
	KindOCI    = "oci"
)

// Collector outcomes. Anything other than StatusOK makes the checks that
// require the collector skip (unavailable, not_applicable) or error (error).
const (
	StatusOK            = "ok"
	StatusUnavailable   = "unavailable"
	StatusNotApplicable = "not_applicable"
	StatusError         = "error"
)

// Facts is one gpuhost.facts/v1 document. Collectors own the top-level keys;
// a key a collector did not fill stays nil and is omitted from the JSON.
type Facts struct {
	Schema     string                     `json:"schema"`
	Target     Target                     `json:"target"`
	Collectors map[string]CollectorStatus `json:"collectors"`

	OS               *OS               `json:"os,omitempty"`
	Kernel           *Kernel           `json:"kernel,omitempty"`
	Packages         []Package         `json:"packages,omitempty"`
	Cgroup           *Cgroup           `json:"cgroup,omitempty"`
	Kubelet          *Kubelet          `json:"kubelet,omitempty"`
	Audit            *Audit            `json:"audit,omitempty"`
	Access           *Access           `json:"access,omitempty"`
	TLS              *TLS              `json:"tls,omitempty"`
	SSH              *SSH              `json:"ssh,omitempty"`
	Encryption       *Encryption       `json:"encryption,omitempty"`
	Network          *Network          `json:"network,omitempty"`
	Systemd          *Systemd          `json:"systemd,omitempty"`
	ContainerRuntime *ContainerRuntime `json:"container_runtime,omitempty"`
	GPU              *GPU              `json:"gpu,omitempty"`
	PCI              *PCI              `json:"pci,omitempty"`
	GPUDriver        *GPUDriver        `json:"gpu_driver,omitempty"`
	Containers       *Containers       `json:"containers,omitempty"`
	Manifest         map[string]any    `json:"manifest,omitempty"`
	ConfigFiles      []ConfigFile      `json:"config_files,omitempty"`
	Vulnerabilities  *Vulnerabilities  `json:"vulnerabilities,omitempty"`
	SBOM             *SBOM             `json:"sbom,omitempty"`
	SecureBoot       *SecureBoot       `json:"secure_boot,omitempty"`
}

// New returns an empty document for the given target, stamped with the schema.
func New(kind, ref string, now time.Time) *Facts {
	return &Facts{
		Schema:     Schema,
		Target:     Target{Kind: kind, Ref: ref, ScannedAt: now.UTC().Format(time.RFC3339)},
		Collectors: map[string]CollectorStatus{},
	}
}

// Record stores a collector's outcome. Collectors call it exactly once.
func (f *Facts) Record(collector, status, reason string) {
	if f.Collectors == nil {
		f.Collectors = map[string]CollectorStatus{}
	}
	f.Collectors[collector] = CollectorStatus{Status: status, Reason: reason}
}

// Target says what was scanned.
type Target struct {
	Kind      string `json:"kind"`
	Ref       string `json:"ref"`
	ScannedAt string `json:"scanned_at"`
	Hostname  string `json:"hostname,omitempty"`
}

// CollectorStatus is one collector's outcome, with a human reason when not ok.
type CollectorStatus struct {
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"`
}
