package scan

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/agnivade/levenshtein"

	"github.com/gpuhost/gpuhost/engine"
	"github.com/gpuhost/gpuhost/internal/userfile"
	"github.com/gpuhost/gpuhost/policies"
	"github.com/gpuhost/gpuhost/policy/bundle"
	policyparams "github.com/gpuhost/gpuhost/policy/params"
)

// Pack names the policy pack a scan compiles: the CLI's --policy,
// --extend-policy, --params and --verification-key, and the Packer gate's
// settings of the same names, both go through it.
type Pack struct {
	// Policies replace the embedded pack; Extend adds to it. Each is a
	// directory or an OPA bundle.
	Policies, Extend []string
	// Params is a YAML or JSON file read as data.gpuhost.params.
	Params string
	// VerificationKey is a PEM file every bundle must be signed with, and
	// VerificationAlg its algorithm; empty is the key's own.
	VerificationKey, VerificationAlg string
	// Set are params given in code, each replacing the file's key of the
	// same name: the gate's vulnerabilities block sets the CVE params so.
	// SetBy names where they came from, in errors.
	Set   map[string]any
	SetBy string
}

// BundleKey reads the verification key; nil when none is set.
func (p Pack) BundleKey() (*engine.BundleKey, error) {
	if p.VerificationKey == "" {
		return nil, nil
	}
	pem, err := userfile.Read(p.VerificationKey, userfile.MaxKey)
	if err != nil {
		return nil, fmt.Errorf("reading verification key: %w", err)
	}
	// The algorithm follows the key unless one is named, and a key that
	// does not fit the one named is refused here, naming the file, rather
	// than as a signature that does not verify.
	key, alg, err := bundle.VerificationKey(string(pem), p.VerificationAlg)
	if err != nil {
		return nil, fmt.Errorf("verification key %s: %w", p.VerificationKey, err)
	}
	return &engine.BundleKey{PEM: key, Algorithm: alg}, nil
}

// Engine loads, verifies and compiles the pack with its parameters, which
// must validate against the params schema of the packs that read them.
// Extra engine options (a memo size, params given in code) come last.
func (p Pack) Engine(ctx context.Context, extra ...engine.Option) (*engine.Engine, error) {
	key, err := p.BundleKey()
	if err != nil {
		return nil, err
	}
	var opts []engine.Option
	if len(p.Policies) == 0 {
		src, err := engine.LoadFS(policies.FS, "embedded")
		if err != nil {
			return nil, err
		}
		opts = append(opts, engine.WithSource(src))
	}
	for _, path := range append(append([]string{}, p.Policies...), p.Extend...) {
		src, err := engine.LoadPath(path, key)
		if err != nil {
			return nil, err
		}
		opts = append(opts, engine.WithSource(src))
	}
	if p.Params != "" || len(p.Set) > 0 {
		params := map[string]any{}
		name := p.SetBy
		if p.Params != "" {
			data, err := userfile.Read(p.Params, userfile.MaxConfig)
			if err != nil {
				return nil, fmt.Errorf("reading params: %w", err)
			}
			if params, err = engine.ParseParams(data, p.Params); err != nil {
				return nil, err
			}
			name = p.Params
		}
		for k, v := range p.Set {
			params[k] = v
		}
		if err := policyparams.ValidateFor(params, name, p.Policies, policies.ParamsSchema); err != nil {
			return nil, err
		}
		opts = append(opts, engine.WithParams(params))
		e, err := engine.New(ctx, append(opts, extra...)...)
		if err != nil {
			return nil, err
		}
		if err := refuseUnknownParams(e, params, name); err != nil {
			return nil, err
		}
		return e, nil
	}
	return engine.New(ctx, append(opts, extra...)...)
}

// refuseUnknownParams fails on a top-level params key that no check of the
// compiled pack reads: a typo in a pin ("pinz") would otherwise disable the
// check it meant to configure without a word. A pack whose check reads
// params with a key known only at run time accepts every key.
func refuseUnknownParams(e *engine.Engine, params map[string]any, file string) error {
	read := map[string]bool{}
	for _, c := range e.Checks() {
		for _, k := range policyparams.Used(e, c) {
			if k == policyparams.All {
				return nil
			}
			read[k] = true
		}
	}
	var unknown []string
	for k := range params {
		if !read[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) == 0 {
		return nil
	}
	sort.Strings(unknown)
	known := slices.Sorted(maps.Keys(read))
	msgs := make([]string, 0, len(unknown))
	for _, k := range unknown {
		msg := fmt.Sprintf("%q", k)
		if near := nearest(k, known); near != "" {
			msg += fmt.Sprintf(" (did you mean %q?)", near)
		}
		msgs = append(msgs, msg)
	}
	return fmt.Errorf("--params %s: no check reads %s", file, strings.Join(msgs, ", "))
}

// nearest is the known key closest to k, when it is close enough to be the
// one meant.
func nearest(k string, known []string) string {
	best, bestDist := "", len(k)/3+1
	for _, c := range known {
		if d := levenshtein.ComputeDistance(k, c); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}
