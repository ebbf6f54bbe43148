package manifest

import (
	"context"

	"github.com/gpuhost/gpuhost/facts/sysroot"
)

// ConfigDigests returns the sha256 of each configuration file present in
// fsys, sorted by path: the config_files a manifest built from the same tree
// records. Drift reads the live side with it so that both sides of the
// comparison come from one piece of code.
func ConfigDigests(ctx context.Context, fsys sysroot.FS) ([]ConfigFile, error) {
	return digestConfigFiles(ctx, fsys)
}
