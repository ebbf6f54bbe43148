package gate

import (
	"os"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/gpuhost/gpuhost/internal/userfile"
	"github.com/gpuhost/gpuhost/reports"
)

// domainBlocks is, per check domain, the template blocks that configure
// what the domain's checks judge, most specific first: the gpuhost-gpu
// provisioner's hardening and stack blocks, the rootfs builder's
// encryption block.
var domainBlocks = map[string][][]string{
	"ssh":     {{"hardening", "ssh"}, {"hardening"}},
	"tls":     {{"hardening", "tls"}, {"hardening"}},
	"key":     {{"hardening", "tls"}, {"hardening"}},
	"net":     {{"hardening", "firewall"}, {"hardening"}},
	"audit":   {{"hardening", "audit"}, {"hardening"}},
	"iam":     {{"hardening", "roles"}, {"hardening", "sudo"}, {"hardening"}},
	"pin":     {{"driver"}},
	"gpu":     {{"driver"}},
	"drift":   {{"manifest"}},
	"runtime": {{"containerd"}, {"container_toolkit"}},
	"sc":      {{"ngc_images"}},
	"enc":     {{"encryption"}},
	"cgroup":  {{"memory_limits"}},
}

// maxTemplate bounds the template read: one a person wrote.
const maxTemplate = 1 << 20

// relateToTemplate points each result that does not pass at the block of
// the template that configures what its check judges, where the template
// has one: code scanning shows the alert beside the line to change. A
// template that cannot be read or parsed relates nothing; the build has
// already used it.
func relateToTemplate(rep *reports.Report, file string) {
	if file == "" {
		return
	}
	src, err := userfile.Read(file, maxTemplate)
	if err != nil {
		return
	}
	f, diags := hclsyntax.ParseConfig(src, file, hcl.InitialPos)
	if diags.HasErrors() {
		return
	}
	blocks := map[string]blockAt{}
	walkBlocks(f.Body.(*hclsyntax.Body), nil, blocks)
	shown := file
	if wd, err := os.Getwd(); err == nil {
		if rel, ok := strings.CutPrefix(file, wd+"/"); ok {
			shown = rel
		}
	}
	for i := range rep.Results {
		r := &rep.Results[i]
		if r.Status == reports.StatusPass || r.OutOfScope {
			continue
		}
		for _, want := range domainBlocks[r.Domain()] {
			if b, ok := blocks[strings.Join(want, " > ")]; ok {
				r.Related = append(r.Related, reports.Related{File: shown, Line: b.line,
					Message: "the template's " + b.name + " block configures what this check judges"})
				break
			}
		}
	}
}

// blockAt is where a block starts and the path that names it.
type blockAt struct {
	line int
	name string
}

// walkBlocks records the first block at every path of block types under
// body, keyed by each tail of the path (so "hardening > ssh" finds the ssh
// block inside a provisioner's hardening block), and the dynamic blocks
// that generate a type by that type.
func walkBlocks(body *hclsyntax.Body, path []string, out map[string]blockAt) {
	for _, b := range body.Blocks {
		typ := b.Type
		if typ == "dynamic" && len(b.Labels) > 0 {
			typ = b.Labels[0]
		}
		here := append(append([]string(nil), path...), describe(b))
		types := append(append([]string(nil), typesOf(path)...), typ)
		for start := range types {
			key := strings.Join(types[start:], " > ")
			if _, seen := out[key]; !seen {
				out[key] = blockAt{line: b.TypeRange.Start.Line, name: strings.Join(here, " > ")}
			}
		}
		walkBlocks(b.Body, here, out)
	}
}

// describe names a block as a reader finds it: its type and labels.
func describe(b *hclsyntax.Block) string {
	s := b.Type
	for _, l := range b.Labels {
		s += " " + strconv.Quote(l)
	}
	return s
}

// typesOf is the block types of a path made by describe.
func typesOf(path []string) []string {
	out := make([]string, len(path))
	for i, p := range path {
		typ, labels, _ := strings.Cut(p, " ")
		if typ == "dynamic" {
			if l, err := strconv.Unquote(labels); err == nil {
				typ = l
			}
		}
		out[i] = typ
	}
	return out
}
