// Command gendocs writes docs/post-processor-gate.mdx: intro.mdx, then the
// field reference `packer-sdc struct-markdown` renders from the comments of
// builder/gate/config.go, one section per documented block.
//
// packer-sdc only renders inside a directory named packer-plugin-*, so it
// runs over a copy of the source in such a directory under a temporary one.
//
//	go run ./internal/gendocs -sdc ../../bin/packer-sdc -out ../../docs/post-processor-gate.mdx
package main

import (
	"bytes"
	_ "embed"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
)

//go:embed intro.mdx
var intro []byte

// section is one documented struct and the HCL block it configures ("" for
// the top level).
type section struct{ typ, block string }

var sections = []section{{"Config", ""}, {"Publish", "publish"}, {"Signing", "publish.signing"}, {"Vulnerabilities", "vulnerabilities"}}

func main() {
	sdc := flag.String("sdc", "", "the packer-sdc binary (required)")
	src := flag.String("src", "config.go", "the Go file whose comments document the configuration")
	out := flag.String("out", "", "the file to write (default: stdout)")
	flag.Parse()
	if err := run(*sdc, *src, *out); err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

func run(sdc, src, out string) error {
	if sdc == "" {
		return fmt.Errorf("-sdc is required (make packer-sdc builds bin/packer-sdc)")
	}
	sdc, err := filepath.Abs(sdc)
	if err != nil {
		return err
	}
	code, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "gate-gendocs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	plugin := filepath.Join(tmp, "packer-plugin-gpuhost")
	pkg := filepath.Join(plugin, "builder", "gate")
	if err := os.MkdirAll(pkg, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(pkg, "config.go"), code, 0o644); err != nil {
		return err
	}
	cmd := exec.Command(sdc, "struct-markdown", "config.go")
	cmd.Dir = pkg
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("packer-sdc struct-markdown: %v: %s", err, msg)
	}
	doc, err := assemble(os.DirFS(filepath.Join(plugin, "docs-partials", "builder", "gate")))
	if err != nil {
		return err
	}
	if out == "" {
		_, err = os.Stdout.Write(doc)
		return err
	}
	return os.WriteFile(out, doc, 0o644)
}

// assemble joins the intro and the partials packer-sdc wrote: per struct a
// description, its required fields and its optional ones, when present.
func assemble(partials fs.FS) ([]byte, error) {
	var doc bytes.Buffer
	doc.Write(intro)
	for _, s := range sections {
		heading := "\n## Configuration reference\n"
		if s.block != "" {
			heading = fmt.Sprintf("\n## `%s` block\n", s.block)
		}
		doc.WriteString(heading)
		for _, kind := range [][2]string{{"", ""}, {"-required", "Required"}, {"-not-required", "Optional"}} {
			part, err := fs.ReadFile(partials, s.typ+kind[0]+".mdx")
			if err != nil {
				if os.IsNotExist(err) {
					continue
				}
				return nil, err
			}
			if kind[1] != "" {
				doc.WriteString("\n### " + kind[1] + "\n")
			}
			doc.WriteString("\n")
			doc.Write(bytes.TrimSpace(part))
			doc.WriteString("\n")
		}
	}
	return doc.Bytes(), nil
}
