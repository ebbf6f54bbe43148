// Command gendocs writes docs/provisioner-gpu.mdx: a hand-written
// introduction followed by the field reference that `packer-sdc
// struct-markdown` generates from the comments in builder/gpu/config.go and
// hardening.go.
//
// struct-markdown only runs inside a directory named packer-plugin-*, so the
// source files are copied into such a directory under a temporary one first.
//
//	go run ./internal/gendocs -out ../../docs/provisioner-gpu.mdx
package main

import (
	"bytes"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

//go:embed intro.mdx
var intro []byte

// blocks are the documented types in reading order, with their HCL names.
var blocks = []struct{ typ, hcl string }{
	{"Config", ""},
	{"Driver", "driver"},
	{"CUDA", "cuda"},
	{"ContainerToolkit", "container_toolkit"},
	{"Containerd", "containerd"},
	{"Hold", "hold"},
	{"NGCImage", "ngc_images"},
	{"Distro", "distro"},
	{"DKMS", "dkms"},
	{"Keyrings", "keyring_sha256"},
	{"Repositories", "repositories"},
	{"ManifestConfig", "manifest"},
	{"MemoryLimits", "memory_limits"},
	{"KubeletMemory", "memory_limits.kubelet"},
	{"Hardening", "hardening"},
	{"HardeningRoles", "hardening.roles"},
	{"HardeningTLS", "hardening.tls"},
	{"HardeningSSH", "hardening.ssh"},
	{"HardeningFirewall", "hardening.firewall"},
	{"HardeningAudit", "hardening.audit"},
	{"HardeningSudo", "hardening.sudo"},
	{"HardeningJournald", "hardening.journald"},
	{"HardeningBaseline", "hardening.baseline"},
}

func main() {
	out := flag.String("out", "", "file to write (default: stdout)")
	src := flag.String("src", "config.go,hardening.go", "the Go files whose comments document the configuration, comma-separated")
	sdc := flag.String("sdc", "", "packer-sdc binary (default: $PACKER_SDC, then packer-sdc on PATH, then bin/packer-sdc of the module)")
	flag.Parse()
	doc, err := render(*sdc, strings.Split(*src, ","))
	if err == nil {
		if *out == "" {
			_, err = os.Stdout.Write(doc)
		} else {
			err = os.WriteFile(*out, doc, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gendocs:", err)
		os.Exit(1)
	}
}

// findSDC locates packer-sdc; the module cannot build it itself because its
// dependencies are not in this module's go.sum.
func findSDC(flagValue, src string) (string, error) {
	if flagValue != "" {
		return filepath.Abs(flagValue)
	}
	if v := os.Getenv("PACKER_SDC"); v != "" {
		return filepath.Abs(v)
	}
	if p, err := exec.LookPath("packer-sdc"); err == nil {
		return filepath.Abs(p)
	}
	dir, err := filepath.Abs(filepath.Dir(src))
	if err != nil {
		return "", err
	}
	for ; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, "bin", "packer-sdc")
			if _, err := os.Stat(p); err == nil {
				return p, nil
			}
			break
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	return "", errors.New("packer-sdc not found: set PACKER_SDC or build it into bin/ (see tools/)")
}

func render(sdcFlag string, srcs []string) ([]byte, error) {
	sdc, err := findSDC(sdcFlag, srcs[0])
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "gendocs-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	pkgDir := filepath.Join(tmp, "packer-plugin-gpuhost", "builder", "gpu")
	if err := os.MkdirAll(pkgDir, 0o755); err != nil {
		return nil, err
	}
	for _, src := range srcs {
		text, err := os.ReadFile(src)
		if err != nil {
			return nil, err
		}
		name := filepath.Base(src)
		if err := os.WriteFile(filepath.Join(pkgDir, name), text, 0o644); err != nil {
			return nil, err
		}
		cmd := exec.Command(sdc, "struct-markdown", name)
		cmd.Dir = pkgDir
		if msg, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("%s struct-markdown %s: %v\n%s", sdc, name, err, msg)
		}
	}
	partials := filepath.Join(tmp, "packer-plugin-gpuhost", "docs-partials", "builder", "gpu")
	var b bytes.Buffer
	b.Write(intro)
	for _, blk := range blocks {
		if blk.hcl == "" {
			b.WriteString("\n## Configuration reference\n")
		} else {
			fmt.Fprintf(&b, "\n## `%s`\n", blk.hcl)
		}
		for _, part := range []struct{ suffix, title string }{
			{"", ""},
			{"-required", "Required"},
			{"-not-required", "Optional"},
		} {
			data, err := os.ReadFile(filepath.Join(partials, blk.typ+part.suffix+".mdx"))
			if errors.Is(err, os.ErrNotExist) {
				continue
			}
			if err != nil {
				return nil, err
			}
			if part.title != "" {
				fmt.Fprintf(&b, "\n### %s\n", part.title)
			}
			b.WriteString("\n")
			b.Write(bytes.TrimSpace(data))
			b.WriteString("\n")
		}
	}
	return b.Bytes(), nil
}
