// Package facts defines gpuhost.facts/v1, the one document that collectors fill
// and policies read. Field names are the contract with the Rego pack: renaming
// a JSON tag is a breaking change to every policy and every saved facts file.
//
// This package holds the whole document and nothing that collects it:
// facts.go is its frame, and each domain's types are in a file named for
// the domain (ssh.go, tls.go, network.go, ...), pure data. The collect
// functions that fill them and the checks that read them are in the
// domain's folder (ssh/, tls/, ...), which imports this package; nothing
// here imports a domain, so that what judges a document links no
// collector.
package facts

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/gpuhost/gpuhost/facts/collect"
)

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

// Collector outcomes, as package collect names them for the collectors.
// Anything other than StatusOK makes the checks that require the collector
// skip (unavailable, not_applicable) or error (error).
const (
	StatusOK            = collect.StatusOK
	StatusUnavailable   = collect.StatusUnavailable
	StatusNotApplicable = collect.StatusNotApplicable
	StatusError         = collect.StatusError
)

// Facts is one gpuhost.facts/v1 document. Collectors own the top-level keys;
// a key a collector did not fill stays nil and is omitted from the JSON.
type Facts struct {
	Schema     string                     `json:"schema" jsonschema:"enum=gpuhost.facts/v1"`
	Target     Target                     `json:"target"`
	Collectors map[string]CollectorStatus `json:"collectors" factschema:"notnull"`
	// NotJudged is what collectors found and no check judges, each with
	// why, so that a report's coverage can name it rather than pass over
	// it in silence.
	NotJudged []NotJudged `json:"not_judged,omitempty" factschema:"notnull"`

	OS               *OS               `json:"os,omitempty"`
	Kernel           *Kernel           `json:"kernel,omitempty"`
	KernelModules    *KernelModules    `json:"kernel_modules,omitempty"`
	Sysctl           *Sysctl           `json:"sysctl,omitempty"`
	Limits           *Limits           `json:"limits,omitempty"`
	Packages         []Package         `json:"packages,omitempty" factschema:"notnull"`
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
	InfiniBand       *InfiniBand       `json:"infiniband,omitempty"`
	GPUDriver        *GPUDriver        `json:"gpu_driver,omitempty"`
	Containers       *Containers       `json:"containers,omitempty"`
	Manifest         map[string]any    `json:"manifest,omitempty"`
	ConfigFiles      []ConfigFile      `json:"config_files,omitempty" factschema:"notnull"`
	Vulnerabilities  *Vulnerabilities  `json:"vulnerabilities,omitempty"`
	SBOM             *SBOM             `json:"sbom,omitempty"`
	SecureBoot       *SecureBoot       `json:"secure_boot,omitempty"`
	Files            *Files            `json:"files,omitempty"`
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

// NotJudged is one thing a collector found and left unjudged: a listener
// that speaks no TLS, a UDP port the TLS probe does not try.
type NotJudged struct {
	Collector string `json:"collector"`
	// What names the thing and says why it is not judged.
	What string `json:"what"`
}

// NoteNotJudged records what collector found and left unjudged, in place
// of what it noted before, keeping the list sorted.
func (f *Facts) NoteNotJudged(collector string, what []string) {
	f.NotJudged = slices.DeleteFunc(f.NotJudged, func(n NotJudged) bool { return n.Collector == collector })
	for _, w := range what {
		f.NotJudged = append(f.NotJudged, NotJudged{Collector: collector, What: w})
	}
	slices.SortFunc(f.NotJudged, func(a, b NotJudged) int {
		return cmp.Or(strings.Compare(a.Collector, b.Collector), strings.Compare(a.What, b.What))
	})
}

// Target says what was scanned.
type Target struct {
	Kind      string `json:"kind" jsonschema:"enum=rootfs,enum=image,enum=host,enum=facts,enum=oci"`
	Ref       string `json:"ref"`
	ScannedAt string `json:"scanned_at" jsonschema:"format=date-time"`
	Hostname  string `json:"hostname,omitempty"`
}

// CollectorStatus is one collector's outcome, with a human reason when not ok.
type CollectorStatus struct {
	Status string `json:"status" jsonschema:"enum=ok,enum=unavailable,enum=not_applicable,enum=error"`
	Reason string `json:"reason,omitempty"`
}
