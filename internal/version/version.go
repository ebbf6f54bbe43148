// Package version says which gpuhost build is running. Release builds set
// Version with -ldflags "-X github.com/gpuhost/gpuhost/internal/version.Version=v1.2.3".
package version

import (
	"runtime/debug"
	"sync"
)

// Version is the release version; "dev" for builds without ldflags.
var Version = "dev"

// String returns the version, with the VCS revision when the build recorded one.
// Every report carries it, and reading the build info parses it afresh each
// time (5% of a fleet scan's CPU), so it is worked out once.
func String() string { return versionString() }

var versionString = sync.OnceValue(func() string {
	v := Version
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += "+" + s.Value[:12]
			}
		}
	}
	return v
})
