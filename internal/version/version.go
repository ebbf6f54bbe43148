// Package version says which gpuhost build is running. Release builds set
// Version with -ldflags "-X github.com/gpuhost/gpuhost/internal/version.Version=v1.2.3".
package version

import "runtime/debug"

// Version is the release version; "dev" for builds without ldflags.
var Version = "dev"

// String returns the version, with the VCS revision when the build recorded one.
func String() string {
	v := Version
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += "+" + s.Value[:12]
			}
		}
	}
	return v
}
