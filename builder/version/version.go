// Package version says which version of the gpuhost Packer plugin is running.
// Packer reads it through the plugin's describe command and uses it in the
// installed binary's name (packer-plugin-gpuhost_v0.1.0_x5.0_linux_amd64).
package version

import sdkversion "github.com/hashicorp/packer-plugin-sdk/version"

var (
	// Version is the plugin's semantic version; releases may set it with
	// -ldflags "-X github.com/gpuhost/gpuhost/builder/version.Version=0.2.0".
	Version = "0.1.0"
	// VersionPrerelease is a pre-release marker such as "dev"; empty for releases.
	VersionPrerelease = ""
	// VersionMetadata is optional build metadata appended after a "+".
	VersionMetadata = ""
)

// PluginVersion is the version the plugin reports to Packer; components
// record it in what they produce (the image manifest, reports).
var PluginVersion = sdkversion.NewPluginVersion(Version, VersionPrerelease, VersionMetadata)
