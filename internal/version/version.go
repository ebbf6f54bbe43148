// Package version says which gpuhost build is running. Release builds set
// Version with -ldflags "-X github.com/gpuhost/gpuhost/internal/version.Version=v1.2.3".
package version

import (
	"runtime/debug"
	"strings"
	"sync"
)

// Version is the release version the build was given; empty or "dev" when
// it was given none, and then the build's own VCS stamp names it.
var Version = "dev"

// String returns the version: the one given at build time with the VCS
// revision it was built from, or, for a plain go build or go install, the
// module version Go recorded (a tag, or a pseudo-version from the commit)
// or else the commit itself. Every report carries it, and reading the
// build info parses it afresh each time, so it is worked out once.
func String() string { return versionString() }

var versionString = sync.OnceValue(func() string {
	info, _ := debug.ReadBuildInfo()
	return fromBuild(Version, info)
})

// fromBuild names a build from the version it was given and its build info.
func fromBuild(given string, info *debug.BuildInfo) string {
	var rev, at string
	dirty := false
	if info != nil {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	short := rev
	if len(short) > 12 {
		short = short[:12]
	}
	if given != "" && given != "dev" {
		if len(short) >= 7 && !strings.Contains(given, short[:7]) {
			return given + "+" + short
		}
		return given
	}
	if info != nil && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return strings.TrimPrefix(info.Main.Version, "v")
	}
	if short == "" {
		return "0.0.0-unknown"
	}
	// The form of a Go pseudo-version: sorts by commit time, names the commit.
	v := "0.0.0-" + stamp(at) + short
	if dirty {
		v += "+dirty"
	}
	return v
}

// stamp turns vcs.time (RFC 3339, UTC) into yyyymmddhhmmss-.
func stamp(at string) string {
	digits := strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, at)
	if len(digits) < 14 {
		return ""
	}
	return digits[:14] + "-"
}
