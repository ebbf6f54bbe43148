package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuild(t *testing.T) {
	vcs := func(modified string) *debug.BuildInfo {
		return &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "6852454a1b2c3d4e5f60718293a4b5c6d7e8f901"},
			{Key: "vcs.time", Value: "2026-12-01T13:24:05Z"},
			{Key: "vcs.modified", Value: modified},
		}}
	}
	cases := []struct {
		name, given string
		info        *debug.BuildInfo
		want        string
	}{
		{"release", "v1.2.3", vcs("false"), "v1.2.3+6852454a1b2c"},
		{"git describe names the commit already", "v1.2.3-4-g6852454", vcs("false"), "v1.2.3-4-g6852454"},
		{"go install of a tag", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.4.0"}}, "0.4.0"},
		{"go build in a checkout", "dev", vcs("false"), "0.0.0-20261201132405-6852454a1b2c"},
		{"with local changes", "", vcs("true"), "0.0.0-20261201132405-6852454a1b2c+dirty"},
		{"no VCS stamp", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "0.0.0-unknown"},
	}
	for _, c := range cases {
		if got := fromBuild(c.given, c.info); got != c.want {
			t.Errorf("%s: fromBuild(%q) = %q, want %q", c.name, c.given, got, c.want)
		}
	}
}
