package gpu

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"

	"github.com/gpuhost/gpuhost/containers/seed"
)

const (
	// ImagesDir is the OCI image layout in the image that holds the
	// pre-seeded bases. It stays after the first-boot import, so that scans
	// of the image and of its hosts find the same thing there.
	ImagesDir = "/var/lib/gpuhost/images"
	// ImportUnit is the first-boot unit that imports ImagesDir into
	// containerd.
	ImportUnit = "gpuhost-import-images.service"
	// importedMarker is written once the import has succeeded.
	importedMarker = ImagesDir + "/.imported"

	imagesStageName  = "gpuhost-gpu-images"
	imagesScriptName = "gpuhost-gpu-images.sh"
)

// ImportUnitText is the systemd unit that imports the seeded layout into
// containerd's k8s.io namespace (the one the kubelet's CRI uses) on the
// first boot with containerd running. ctr reads an OCI archive, so the
// layout is streamed to it through tar rather than written out twice.
// containerd names each image after its io.containerd.image.name
// annotation, which the seeder sets to the configured ref.
//
// Wants=, not Requires=, and a wait for containerd's socket: on a slow
// first boot (an encrypted root re-encrypting beside it) containerd's start
// can time out once before its own Restart= brings it up, and with
// Requires= that one timeout failed the import for good ("Dependency
// failed"), leaving the host without its images until a reboot.
const ImportUnitText = `[Unit]
Description=Import the container images gpuhost pre-seeded into containerd
Wants=containerd.service
After=containerd.service
ConditionPathExists=` + ImagesDir + `/index.json
ConditionPathExists=!` + importedMarker + `

[Service]
Type=oneshot
RemainAfterExit=yes
TimeoutStartSec=1h
ExecStartPre=/bin/sh -c 'i=0; until ctr version >/dev/null 2>&1; do i=$$((i+1)); [ $$i -lt 600 ] || { echo "containerd did not answer in 10 minutes" >&2; exit 1; }; sleep 1; done'
ExecStart=/bin/sh -c 'cd ` + ImagesDir + ` && tar -cf - oci-layout index.json blobs | ctr -n k8s.io images import - && touch ` + importedMarker + `'

[Install]
WantedBy=multi-user.target
`

// seedImages pulls every ngc_images entry by digest into the cache on the
// build host (pullImages), uploads the resulting layout to the target
// through the communicator and installs it with the first-boot import unit.
func (p *Provisioner) seedImages(ctx context.Context, ui packersdk.Ui, comm packersdk.Communicator, cfg *Config) error {
	if len(cfg.NGCImages) == 0 {
		return nil
	}
	l, pulled, err := p.pullImages(ctx, ui, cfg)
	if err != nil {
		return err
	}
	index, err := seed.IndexJSON(pulled)
	if err != nil {
		return fmt.Errorf("ngc_images: %w", err)
	}

	stage := path.Join(cfg.RemoteFolder, imagesStageName)
	installed := false
	defer func() {
		// A half-uploaded layout must not stay behind in the image; best
		// effort, since the build is failing for its own reason already.
		if !installed {
			_, _, _ = probe(ctx, comm, "rm -rf '"+stage+"'")
		}
	}()
	blobs := seed.UniqueBlobs(pulled)
	ui.Say(fmt.Sprintf("gpuhost-gpu: uploading %d blobs to %s", len(blobs), stage))
	for _, b := range blobs {
		if err := uploadFile(comm, l.BlobPath(b.Digest), path.Join(stage, "blobs", "sha256", strings.TrimPrefix(b.Digest, "sha256:"))); err != nil {
			return err
		}
	}
	for name, body := range map[string]string{
		"index.json": string(index),
		"oci-layout": string(seed.LayoutFile()),
		ImportUnit:   ImportUnitText,
	} {
		dst := path.Join(stage, name)
		if err := comm.Upload(dst, strings.NewReader(body), nil); err != nil {
			return fmt.Errorf("ngc_images: uploading %s: %w", dst, err)
		}
	}
	scriptPath := path.Join(cfg.RemoteFolder, imagesScriptName)
	if err := comm.Upload(scriptPath, strings.NewReader(imagesScript(stage, len(pulled))), nil); err != nil {
		return fmt.Errorf("ngc_images: uploading %s: %w", scriptPath, err)
	}
	if err := runScript(ctx, ui, comm, cfg, scriptPath, "install ngc images"); err != nil {
		return err
	}
	installed = true
	return nil
}

// pullImages pulls every ngc_images entry by digest into the build host's
// cache, and returns the cache's layout and what was pulled.
func (p *Provisioner) pullImages(ctx context.Context, ui packersdk.Ui, cfg *Config) (*seed.Layout, []*seed.Pulled, error) {
	cacheDir := cfg.NGCCacheDir
	if cacheDir == "" {
		d, err := packersdk.CachePath("gpuhost-ngc")
		if err != nil {
			return nil, nil, fmt.Errorf("ngc_images: the cache directory: %w", err)
		}
		cacheDir = d
	}
	l, err := seed.OpenLayout(cacheDir)
	if err != nil {
		return nil, nil, fmt.Errorf("ngc_images: %w", err)
	}
	o := p.seedOptions
	o.Registry = cfg.NGCRegistry
	o.Allowed = cfg.NGCAllowedRegistries
	o.Platform = cfg.NGCPlatform
	o.Progress = func(pr seed.Progress) {
		if pr.Cached || pr.Total < seed.ProgressEvery {
			return
		}
		ui.Say(fmt.Sprintf("gpuhost-gpu: %s: blob %s: %s of %s", pr.Ref, shortDigest(pr.Digest), size(pr.Done), size(pr.Total)))
	}
	// On a terminal Packer draws a bar per blob; in a CI log the lines
	// above are the progress.
	o.Track = func(ref, digest string, done, total int64, body io.ReadCloser) io.ReadCloser {
		return ui.TrackProgress(ref+" "+shortDigest(digest), done, total, body)
	}
	var pulled []*seed.Pulled
	for _, img := range cfg.NGCImages {
		what := img.Ref
		if !strings.Contains(what, "@") {
			what += "@" + img.PinnedDigest()
		}
		ui.Say("gpuhost-gpu: pulling " + what)
		pl, err := l.Pull(ctx, img.Ref, img.PinnedDigest(), o)
		if err != nil {
			return nil, nil, fmt.Errorf("ngc_images: %w", err)
		}
		ui.Say(fmt.Sprintf("gpuhost-gpu: %s verified: %s downloaded, %s from the cache", img.Ref, size(pl.Fetched), size(pl.Cached)))
		pulled = append(pulled, pl)
	}
	return l, pulled, nil
}

// imagesScript moves the staged layout into place whole (a layout from an
// earlier run is replaced, never merged, so index.json and blobs agree),
// clears the import marker so that the new content is imported, and
// enables the unit the way systemctl enable would, which needs no running
// systemd.
func imagesScript(stage string, images int) string {
	return fmt.Sprintf(`set -eu
echo "%[5]sinstall ngc images"
src='%[1]s'
dst='%[2]s'
mkdir -p "${dst%%/*}" /etc/systemd/system/multi-user.target.wants
mv -f "$src/%[3]s" '/etc/systemd/system/%[3]s'
chmod 0644 '/etc/systemd/system/%[3]s'
rm -rf "$dst.new"
mv "$src" "$dst.new"
chmod -R a+rX "$dst.new"
rm -rf "$dst"
mv "$dst.new" "$dst"
ln -sf '/etc/systemd/system/%[3]s' '/etc/systemd/system/multi-user.target.wants/%[3]s'
echo "gpuhost-gpu: %[4]d seeded images at $dst, imported at first boot by %[3]s"
`, stage, ImagesDir, ImportUnit, images, stepMarker)
}

// uploadFile streams one local file to the target.
func uploadFile(comm packersdk.Communicator, src, dst string) error {
	f, err := os.Open(src)
	if err != nil {
		return fmt.Errorf("ngc_images: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("ngc_images: %w", err)
	}
	if err := comm.Upload(dst, f, &fi); err != nil {
		return fmt.Errorf("ngc_images: uploading %s: %w", dst, err)
	}
	return nil
}

func shortDigest(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}

// size formats a byte count for the build log.
func size(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	default:
		return fmt.Sprintf("%d bytes", n)
	}
}
