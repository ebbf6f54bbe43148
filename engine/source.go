package engine

import (
	"archive/tar"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/bundle"

	"github.com/gpuhost/gpuhost/internal/boundedyaml"
	"github.com/gpuhost/gpuhost/internal/userfile"
)

// DefaultParamsFile is the name of a pack's parameter defaults, at its root.
const DefaultParamsFile = "params.default.yaml"

// maxPolicyFile bounds one policy file; a pack of megabyte-sized Rego files is
// not something a reviewer could read, so it is refused rather than loaded.
const maxPolicyFile = 4 << 20

// maxPackBytes bounds a whole pack, a directory or a bundle's files once
// decompressed: a bundle's gzip can hold far more than its size says, and
// its data files are decoded into memory.
const maxPackBytes = 16 << 20

// maxPackFiles bounds the entries of a pack.
const maxPackFiles = 10_000

// Source is one policy pack: Rego modules and the defaults of its parameters.
type Source struct {
	// Name is shown in errors: "embedded", a directory, or a bundle path.
	Name string
	// Modules maps a file path, relative to the pack's root, to its text.
	// Rego tests (*_test.rego) are kept: `policy test` needs them.
	Modules map[string][]byte
	// Params are the pack's parameter defaults, parsed from params.default.yaml.
	Params map[string]any
	// Profiles are the pack's compliance profiles, each profile.yaml's
	// bytes by the name of its folder under compliance/ (package
	// policy/compliance reads them). The engine only carries them, and
	// counts them in the pack's digest, since they are signed with it.
	Profiles map[string][]byte
}

// profileName returns the profile's name when p is a profile file of a
// pack (compliance/NAME/profile.yaml).
func profileName(p string) (string, bool) {
	parts := strings.Split(p, "/")
	if len(parts) != 3 || parts[0] != "compliance" || parts[2] != "profile.yaml" || parts[1] == "" {
		return "", false
	}
	return parts[1], true
}

// LoadFS reads every *.rego file, params.default.yaml and the compliance
// profiles from fsys.
func LoadFS(fsys fs.FS, name string) (*Source, error) {
	src := &Source{Name: name, Modules: map[string][]byte{}}
	var total int64
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if strings.HasPrefix(d.Name(), ".") && p != "." {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		switch {
		case strings.HasSuffix(p, ".rego"):
			data, err := readBounded(fsys, p)
			if err != nil {
				return err
			}
			if total += int64(len(data)); total > maxPackBytes {
				return fmt.Errorf("the pack's files add up to more than %d bytes", maxPackBytes)
			}
			src.Modules[p] = data
		case p == DefaultParamsFile:
			data, err := readBounded(fsys, p)
			if err != nil {
				return err
			}
			params, err := ParseParams(data, path.Join(name, p))
			if err != nil {
				return err
			}
			src.Params = params
		default:
			name, ok := profileName(p)
			if !ok {
				return nil
			}
			data, err := readBounded(fsys, p)
			if err != nil {
				return err
			}
			if total += int64(len(data)); total > maxPackBytes {
				return fmt.Errorf("the pack's files add up to more than %d bytes", maxPackBytes)
			}
			if src.Profiles == nil {
				src.Profiles = map[string][]byte{}
			}
			src.Profiles[name] = data
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("loading policies from %s: %w", name, err)
	}
	if len(src.Modules) == 0 {
		return nil, fmt.Errorf("loading policies from %s: no .rego files found", name)
	}
	return src, nil
}

func readBounded(fsys fs.FS, p string) ([]byte, error) {
	f, err := fsys.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxPolicyFile+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p, err)
	}
	if len(data) > maxPolicyFile {
		return nil, fmt.Errorf("reading %s: larger than %d bytes", p, maxPolicyFile)
	}
	return data, nil
}

// checkBundleSize reads the gzipped tarball r through once, before OPA
// does, and refuses it when its files decompress to more than
// maxPackBytes in all, or number more than maxPackFiles. OPA's reader bounds
// each file only.
func checkBundleSize(r io.Reader) error {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("not a gzipped tarball: %w", err)
	}
	tr := tar.NewReader(zr)
	var total int64
	for n := 0; ; n++ {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the tarball: %w", err)
		}
		if n >= maxPackFiles {
			return fmt.Errorf("more than %d files", maxPackFiles)
		}
		// Count what the entry really holds, not what its header claims.
		got, err := io.Copy(io.Discard, io.LimitReader(tr, maxPackBytes-total+1))
		if err != nil {
			return fmt.Errorf("reading %s in the tarball: %w", hdr.Name, err)
		}
		if total += got; total > maxPackBytes {
			return fmt.Errorf("its files decompress to more than %d bytes", maxPackBytes)
		}
	}
}

// BundleKey verifies a signed OPA bundle.
type BundleKey struct {
	// PEM is the public key (or the HMAC secret for HS algorithms).
	PEM string
	// Algorithm is the JWT signing algorithm; RS256 when empty.
	Algorithm string
}

// LoadPath loads a policy directory, or an OPA bundle (.tar.gz). With a key,
// a bundle must carry a valid signature over every file, or loading fails.
func LoadPath(p string, key *BundleKey) (*Source, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("loading policies: %w", err)
	}
	if info.IsDir() {
		if key != nil {
			return nil, fmt.Errorf("loading policies from %s: a verification key needs a signed bundle, not a directory", p)
		}
		return LoadFS(os.DirFS(p), p)
	}
	return loadBundle(p, key)
}

func loadBundle(p string, key *BundleKey) (*Source, error) {
	f, err := userfile.Open(p)
	if err != nil {
		return nil, fmt.Errorf("loading bundle: %w", err)
	}
	defer f.Close()
	if err := checkBundleSize(f); err != nil {
		return nil, fmt.Errorf("loading bundle %s: %w", p, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("loading bundle %s: %w", p, err)
	}
	r := bundle.NewReader(f).
		WithProcessAnnotations(true).
		WithRegoVersion(ast.RegoV1).
		WithSizeLimitBytes(maxPolicyFile)
	if key != nil {
		alg := key.Algorithm
		if alg == "" {
			alg = "RS256"
		}
		vc := bundle.NewVerificationConfig(map[string]*bundle.KeyConfig{
			"gpuhost": {Key: key.PEM, Algorithm: alg},
		}, "gpuhost", "", nil)
		r = r.WithBundleVerificationConfig(vc)
	} else {
		r = r.WithSkipBundleVerification(true)
	}
	b, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("loading bundle %s: %w", p, err)
	}
	src := &Source{Name: p, Modules: map[string][]byte{}}
	for _, m := range b.Modules {
		name := strings.TrimPrefix(m.Path, "/")
		src.Modules[name] = m.Raw
	}
	if len(src.Modules) == 0 {
		return nil, fmt.Errorf("loading bundle %s: no .rego files found", p)
	}
	// A bundle carries its defaults as data under gpuhost.params, and its
	// profiles under gpuhost.compliance by name; a profile goes back to the
	// bytes its reader parses (JSON, which is YAML).
	if g, ok := b.Data["gpuhost"].(map[string]any); ok {
		if params, ok := g["params"].(map[string]any); ok {
			src.Params = params
		}
		if profiles, ok := g["compliance"].(map[string]any); ok {
			src.Profiles = map[string][]byte{}
			for name, prof := range profiles {
				raw, err := json.Marshal(prof)
				if err != nil {
					return nil, fmt.Errorf("loading bundle %s: compliance profile %s: %w", p, name, err)
				}
				src.Profiles[name] = raw
			}
		}
	}
	return src, nil
}

// ParseParams reads a params document (YAML or JSON; JSON is YAML) whose top
// level must be a mapping.
func ParseParams(data []byte, name string) (map[string]any, error) {
	var params map[string]any
	if err := boundedyaml.Decode(name, data, &params); err != nil {
		return nil, fmt.Errorf("parsing params: %w", err)
	}
	if params == nil {
		params = map[string]any{}
	}
	return normalize(params).(map[string]any), nil
}

// normalize turns the YAML decoder's numeric types into what OPA expects
// (json.Number-compatible values), and map[any]any into map[string]any.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
		return x
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[fmt.Sprint(k)] = normalize(e)
		}
		return out
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
		return x
	case uint64:
		return int64(x)
	case int:
		return int64(x)
	}
	return v
}

// mergeParams overlays user params on the defaults, key by key at the top
// level: a user who sets allowed_ports replaces the whole list.
func mergeParams(layers ...map[string]any) map[string]any {
	out := map[string]any{}
	for _, l := range layers {
		for k, v := range l {
			out[k] = v
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
