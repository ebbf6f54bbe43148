// Package bundle writes a policy pack as a signed OPA bundle: the Rego
// modules (tests left out), the pack's parameter defaults as data under
// gpuhost.params and its compliance profiles under gpuhost.compliance, a
// manifest that claims the gpuhost root, and a .signatures.json whose JWT lists the SHA-256 of every file, as OPA signs
// bundles. engine.LoadPath with a key, and OPA itself, verify it.
package bundle

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"

	"github.com/gpuhost/gpuhost/engine"
)

// KeyID is the key id the signature names; engine.LoadPath verifies with a
// key registered under the same id.
const KeyID = "gpuhost"

// Root is the one data and policy root a gpuhost bundle owns.
const Root = "gpuhost"

// Options configure Write.
type Options struct {
	// SigningKey is the PEM private key (or the HMAC secret for HS
	// algorithms). Empty: the bundle is written unsigned.
	SigningKey string
	// Algorithm is the JWT signing algorithm; when empty, the key's own
	// (RS256 for RSA, ES256 for ECDSA P-256...).
	Algorithm string
	// Revision is written into the manifest; when empty it is derived from
	// the content, so the same pack always gets the same revision.
	Revision string
}

// Write reads the pack in fsys (named name in errors) and writes it to w as
// a gzipped tar OPA bundle, signed when opts.SigningKey is set.
func Write(w io.Writer, fsys fs.FS, name string, opts Options) error {
	src, err := engine.LoadFS(fsys, name)
	if err != nil {
		return err
	}
	b, err := build(src, opts)
	if err != nil {
		return fmt.Errorf("bundling %s: %w", name, err)
	}
	if err := bundle.NewWriter(w).DisableFormat(true).Write(b); err != nil {
		return fmt.Errorf("writing bundle of %s: %w", name, err)
	}
	return nil
}

// Build is Write into memory.
func Build(fsys fs.FS, name string, opts Options) ([]byte, error) {
	var buf bytes.Buffer
	if err := Write(&buf, fsys, name, opts); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func build(src *engine.Source, opts Options) (bundle.Bundle, error) {
	names := make([]string, 0, len(src.Modules))
	for p := range src.Modules {
		// Tests are for `policy test` on the source tree; a deployed pack
		// does not need them, and leaving them out keeps data.*_test away
		// from the scanner.
		if strings.HasSuffix(p, "_test.rego") {
			continue
		}
		names = append(names, p)
	}
	sort.Strings(names)
	if len(names) == 0 {
		return bundle.Bundle{}, fmt.Errorf("no policies besides tests")
	}

	h := sha256.New()
	var b bundle.Bundle
	for _, p := range names {
		raw := src.Modules[p]
		m, err := ast.ParseModuleWithOpts(p, string(raw), ast.ParserOptions{
			RegoVersion:       ast.RegoV1,
			ProcessAnnotation: true,
		})
		if err != nil {
			return bundle.Bundle{}, err
		}
		if !strings.HasPrefix(m.Package.Path.String(), "data."+Root+".") {
			return bundle.Bundle{}, fmt.Errorf("%s: package %s is outside data.%s", p, m.Package.Path, Root)
		}
		url := "/" + path.Clean(p)
		b.Modules = append(b.Modules, bundle.ModuleFile{URL: url, Path: url, Raw: raw, Parsed: m})
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(raw))
		h.Write(raw)
	}

	// Data goes through JSON so that what is hashed for the signature is
	// exactly what a reader will parse back from data.json.
	params := src.Params
	if params == nil {
		params = map[string]any{}
	}
	root := map[string]any{"params": params}
	if len(src.Profiles) > 0 {
		profiles := map[string]any{}
		for name, data := range src.Profiles {
			p, err := engine.ParseParams(data, "compliance/"+name+"/profile.yaml")
			if err != nil {
				return bundle.Bundle{}, err
			}
			profiles[name] = p
		}
		root["compliance"] = profiles
	}
	raw, err := json.Marshal(map[string]any{Root: root})
	if err != nil {
		return bundle.Bundle{}, fmt.Errorf("encoding params: %w", err)
	}
	h.Write(raw)
	var data map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&data); err != nil {
		return bundle.Bundle{}, fmt.Errorf("encoding params: %w", err)
	}
	b.Data = data

	rev := opts.Revision
	if rev == "" {
		rev = "sha256:" + hex.EncodeToString(h.Sum(nil))[:16]
	}
	b.Manifest.Revision = rev
	b.Manifest.Roots = &[]string{Root}
	b.Manifest.SetRegoVersion(ast.RegoV1)

	if opts.SigningKey != "" {
		key, alg, err := SigningKey(opts.SigningKey, opts.Algorithm)
		if err != nil {
			return bundle.Bundle{}, fmt.Errorf("signing: %w", err)
		}
		sc := bundle.NewSigningConfig(key, alg, "")
		if err := b.GenerateSignature(sc, KeyID, false); err != nil {
			return bundle.Bundle{}, fmt.Errorf("signing: %w", err)
		}
	}
	return b, nil
}
