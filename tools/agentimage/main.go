// Command agentimage builds the agent's OCI image (deploy/agentimage),
// writes it as an OCI layout or pushes it by digest, and renders the
// DaemonSet that runs it (deploy.RenderDaemonSet).
//
//	go run ./tools/agentimage -base out/agent-base.tar -binary bin/gpuhost-agent \
//	    -push 127.0.0.1:5055/gpuhost/gpuhost-agent -insecure -daemonset out/daemonset.yaml
//
// A -base that does not exist yet is bootstrapped there with mmdebstrap (as
// root); it is kept, so later builds only add the binary.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/gpuhost/gpuhost/deploy"
	"github.com/gpuhost/gpuhost/deploy/agentimage"
	"github.com/gpuhost/gpuhost/manifest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:])
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "agentimage:", err)
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("agentimage", flag.ContinueOnError)
	base := fs.String("base", "out/agent-base.tar", "the base root filesystem tar; bootstrapped here with mmdebstrap when it does not exist")
	aptCache := fs.String("apt-cache", "", "a directory that keeps the base's packages between bootstraps")
	binary := fs.String("binary", "bin/gpuhost-agent", "the lean agent binary (make build)")
	out := fs.String("layout", "", "write the image to this OCI layout directory")
	push := fs.String("push", "", "push the image by digest to this repository (REGISTRY/REPO)")
	insecure := fs.Bool("insecure", false, "reach the -push registry over plain HTTP (a local test registry)")
	daemonSet := fs.String("daemonset", "", "render the DaemonSet with the pushed image by digest into this file (needs -push)")
	version := fs.String("version", "dev", "the image's org.opencontainers.image.version label")
	revision := fs.String("revision", "", "the image's org.opencontainers.image.revision label")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 0 || *out == "" && *push == "" || *daemonSet != "" && *push == "" {
		fs.Usage()
		return fmt.Errorf("%w: give -layout or -push (and -push for -daemonset)", flag.ErrHelp)
	}
	// The repository is checked before minutes go into a bootstrap.
	var repo name.Repository
	if *push != "" {
		var opts []name.Option
		if *insecure {
			opts = append(opts, name.Insecure)
		}
		r, err := name.NewRepository(*push, append(opts, name.StrictValidation)...)
		if err != nil {
			return fmt.Errorf("parsing repository %q: %w", *push, err)
		}
		repo = r
	}
	if _, err := os.Stat(*base); errors.Is(err, os.ErrNotExist) {
		fmt.Fprintf(os.Stderr, "bootstrapping the agent's base into %s\n", *base)
		if err := os.MkdirAll(filepath.Dir(*base), 0o755); err != nil {
			return err
		}
		epoch := time.Unix(0, 0)
		if err := agentimage.Base(ctx, *base, agentimage.BaseOptions{AptCache: *aptCache, SourceDateEpoch: epoch}); err != nil {
			return err
		}
	}
	img, err := agentimage.Build(*base, *binary, agentimage.Options{Version: *version, Revision: *revision})
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return fmt.Errorf("digesting the image: %w", err)
	}
	if *out != "" {
		if err := writeLayout(*out, img); err != nil {
			return err
		}
		fmt.Printf("wrote %s (%s)\n", *out, digest)
	}
	if *push == "" {
		return nil
	}
	ref := repo.Digest(digest.String())
	if err := remote.Write(ref, img, remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		return fmt.Errorf("pushing %s: %w", ref, err)
	}
	fmt.Printf("pushed %s\n", ref)
	if *daemonSet != "" {
		var b bytes.Buffer
		if err := deploy.RenderDaemonSet(&b, ref.String()); err != nil {
			return err
		}
		if err := manifest.WriteFileAtomic(*daemonSet, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("writing the DaemonSet: %w", err)
		}
		fmt.Printf("wrote %s\n", *daemonSet)
	}
	return nil
}

// writeLayout writes img as the one image of a fresh OCI layout at dir.
func writeLayout(dir string, img v1.Image) error {
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("writing the OCI layout %s: %w", dir, err)
	}
	if err := p.AppendImage(img); err != nil {
		return fmt.Errorf("writing the OCI layout %s: %w", dir, err)
	}
	return nil
}
