package rootfs

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/packer-plugin-sdk/multistep"
	packersdk "github.com/hashicorp/packer-plugin-sdk/packer"
)

// manifestPath is where the gpu provisioner writes the baked manifest.
const manifestPath = "etc/gpuhost/manifest.json"

// Artifact is what a rootfs build produced.
type Artifact struct {
	files  []string
	rootfs string
	format string
	// luks2 says the disk's root is encrypted.
	luks2 bool
	// generated is the build's generated data, for post-processors.
	generated map[string]interface{}
	// treeDigest is the rootfs tree's digest (manifest/treedigest).
	treeDigest string
}

var _ packersdk.Artifact = (*Artifact)(nil)

func newArtifact(state multistep.StateBag) *Artifact {
	c := state.Get(stateConfig).(*Config)
	a := &Artifact{format: c.OutputFormat, luks2: c.encryptedDisk()}
	if f, ok := state.GetOk(stateFiles); ok {
		a.files = f.([]string)
	}
	if r, ok := state.GetOk(stateRootfs); ok {
		a.rootfs = r.(string)
	}
	if d, ok := state.GetOk(stateTreeDigest); ok {
		a.treeDigest = d.(string)
	}
	if g, ok := state.GetOk("generated_data"); ok {
		a.generated, _ = g.(map[string]interface{})
	}
	return a
}

// BuilderId returns "gpuhost.rootfs".
func (a *Artifact) BuilderId() string { return BuilderID }

// Files returns the output: the rootfs directory, or the tarball, image or disk.
func (a *Artifact) Files() []string { return append([]string(nil), a.files...) }

// Id returns the output format and path.
func (a *Artifact) Id() string {
	if len(a.files) == 0 {
		return ""
	}
	return a.format + ":" + a.files[0]
}

// String describes the artifact for the build's summary.
func (a *Artifact) String() string {
	s := fmt.Sprintf("rootfs (%s): %s", a.format, strings.Join(a.files, ", "))
	if a.rootfs != "" && a.format != "dir" {
		s += "\nrootfs directory: " + a.rootfs
	}
	if a.treeDigest != "" {
		s += "\nrootfs tree digest: " + a.treeDigest
	}
	return s
}

// State returns "rootfs" (the rootfs directory, or "" once removed),
// "manifest" (the path of etc/gpuhost/manifest.json in it, or "" when the
// rootfs has none), "format" (dir, tar, raw, qcow2 or disk), "luks2" (true when
// the disk's root is a LUKS2 volume, whose files a scan reads from the rootfs
// directory), "tree_digest" (the digest of the finished rootfs tree,
// "sha256:<hex>", as `gpuhost tree-digest` computes it) and "generated_data".
func (a *Artifact) State(name string) interface{} {
	switch name {
	case "rootfs":
		return a.rootfs
	case "manifest":
		if a.rootfs == "" {
			return ""
		}
		// Lstat through os.Root: a manifest that is a link is not ours.
		root, err := os.OpenRoot(a.rootfs)
		if err != nil {
			return ""
		}
		defer root.Close()
		if fi, err := root.Lstat(manifestPath); err == nil && fi.Mode().IsRegular() {
			return filepath.Join(a.rootfs, manifestPath)
		}
		return ""
	case "format":
		return a.format
	case "luks2":
		return a.luks2
	case "tree_digest":
		return a.treeDigest
	case "generated_data":
		return a.generated
	}
	return nil
}

// Destroy removes the output files and the rootfs directory.
func (a *Artifact) Destroy() error {
	var errs []error
	for _, f := range a.files {
		if err := removeTree(f); err != nil {
			errs = append(errs, err)
		}
	}
	if a.rootfs != "" {
		if err := removeTree(a.rootfs); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
