package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/sysroot"
	"github.com/gpuhost/gpuhost/internal/userfile"
	"github.com/gpuhost/gpuhost/manifest"
	"github.com/gpuhost/gpuhost/scan"
	"github.com/gpuhost/gpuhost/target"
)

// maxBaseline bounds the baseline manifest read: a full CUDA image's
// inventory is a few hundred KiB of JSON, so this leaves ample room.
const maxBaseline = 64 << 20

// configFilesCollector names the live config_files facts in the collector
// map, so that the drift checks reading them gate on it like any other.
const configFilesCollector = "config_files"

// driftCommand compares a target with a baked manifest: it collects the
// target's facts, puts the baseline in the facts' manifest key (in place of
// whatever manifest the target carries, which drift must not trust), adds
// the live configuration digests, and evaluates the whole pack.
func (a *app) driftCommand() *cobra.Command {
	var sf scanFlags
	var hf hostFlags
	var baseline, rootfs, savedFacts string
	cmd := &cobra.Command{
		Use:   "drift --baseline FILE [--rootfs DIR | --facts FILE]",
		Short: "Compare the running host (or a rootfs, or saved facts) with a baked manifest, and evaluate the pack",
		Long: "Drift compares live facts with a baked gpuhost.manifest/v1 (the GH-DRIFT checks: packages, holds,\n" +
			"kernel, NVIDIA driver, NGC bases, configuration digests) and runs a fresh evaluation of the whole pack.\n" +
			"The target is the running host unless --rootfs or --facts names another. Saved facts carry no\n" +
			"configuration digests unless they were collected by drift, so the digest check skips on them.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if baseline == "" {
				return errors.New("--baseline is required")
			}
			base, err := readBaseline(baseline)
			if err != nil {
				return err
			}
			return a.scanCollected(cmd.Context(), &sf, func(ctx context.Context) (*facts.Facts, error) {
				var f *facts.Facts
				var err error
				switch {
				case savedFacts != "":
					f, err = readFactsFile(savedFacts)
				case rootfs != "":
					f, err = a.driftFacts(ctx, rootfs, false, &hf)
				default:
					f, err = a.driftFacts(ctx, hf.root, true, &hf)
				}
				if err != nil {
					return nil, err
				}
				f.Manifest = base
				f.Record("manifest", facts.StatusOK, "")
				return f, nil
			})
		},
	}
	sf.register(cmd)
	hf.register(cmd)
	cmd.Flags().StringVar(&baseline, "baseline", "", "the baked manifest to compare with (an image carries it at "+manifest.Path+")")
	cmd.Flags().StringVar(&rootfs, "rootfs", "", "compare an unpacked image root filesystem instead of the running host")
	cmd.Flags().StringVar(&savedFacts, "facts", "", "compare a saved facts document (gpuhost.facts/v1) instead of the running host")
	cmd.MarkFlagsMutuallyExclusive("rootfs", "facts")
	return a.collectsFacts(cmd)
}

// driftFacts collects the facts of a rootfs (live false) or the host, and
// the digests of the configuration files the manifest records, read through
// the same code the manifest was built with.
func (a *app) driftFacts(ctx context.Context, dir string, live bool, hf *hostFlags) (*facts.Facts, error) {
	var f *facts.Facts
	var err error
	if live {
		f, err = target.Host(ctx, dir, a.collectOptions(hf))
	} else {
		f, err = target.Rootfs(ctx, dir, a.collectOptions(nil))
	}
	if err != nil {
		return nil, err
	}
	if dir == "" {
		dir = "/"
	}
	fsys, closer, err := sysroot.Open(dir)
	if err != nil {
		return nil, err
	}
	defer closer.Close()
	files, err := manifest.ConfigDigests(ctx, fsys)
	if err != nil {
		// Fail closed: the checks that need the digests error, and no
		// missing digest reads as an unchanged file.
		f.Record(configFilesCollector, facts.StatusError, err.Error())
		return f, nil
	}
	f.ConfigFiles = make([]facts.ConfigFile, 0, len(files))
	for _, c := range files {
		f.ConfigFiles = append(f.ConfigFiles, facts.ConfigFile{Path: c.Path, SHA256: c.SHA256})
	}
	f.Record(configFilesCollector, facts.StatusOK, "")
	return f, nil
}

// readBaseline reads and checks a manifest, and returns it in the shape the
// facts document carries it: a JSON object, numbers kept exact.
func readBaseline(path string) (map[string]any, error) {
	data, err := userfile.Read(path, maxBaseline)
	if err != nil {
		return nil, fmt.Errorf("reading baseline: %w", err)
	}
	m, err := manifest.Decode(data)
	if problem, ok := jsonProblem(err); ok {
		return nil, fmt.Errorf("baseline %s: %s; --baseline takes the baked manifest (gpuhost.manifest/v1) that `gpuhost manifest` writes and an image carries at %s", path, problem, manifest.Path)
	}
	if err != nil {
		return nil, fmt.Errorf("baseline %s: %w", path, err)
	}
	// Re-encode the decoded manifest rather than pass the file through, so
	// that the policies see exactly the fields the schema knows.
	canon, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("baseline %s: %w", path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(canon))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil {
		return nil, fmt.Errorf("baseline %s: %w", path, err)
	}
	return out, nil
}

// readFactsFile reads one saved facts document and holds it to the schema
// before it is trusted as a Facts value.
func readFactsFile(path string) (*facts.Facts, error) {
	data, err := userfile.Read(path, scan.MaxSavedDoc)
	if err != nil {
		return nil, fmt.Errorf("reading facts: %w", err)
	}
	if _, err := facts.DecodeJSON(data); err != nil {
		return nil, fmt.Errorf("facts %s: %w", path, err)
	}
	var f facts.Facts
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("facts %s: %w", path, err)
	}
	if f.Collectors == nil {
		f.Collectors = map[string]facts.CollectorStatus{}
	}
	return &f, nil
}
