# METADATA
# title: The host runs (or the image boots) the unified cgroup v2 hierarchy
# description: >-
#   cgroup v2 must be the hierarchy in use - on a live host as mounted at /sys/fs/cgroup, and in
#   an image as the kernel command line (systemd.unified_cgroup_hierarchy) and the systemd default
#   decide. The container runtimes' systemd cgroup driver and current kubelets expect it.
# scope: package
# custom:
#   id: GH-CGR-001
#   severity: high
#   location: /etc/default/grub
#   remediation: >-
#     Remove "systemd.unified_cgroup_hierarchy=0" (or set it to 1) on the kernel command line in
#     /etc/default/grub, run update-grub, and reboot.
#   controls:
#     nist-800-53: [CM-2, CM-6]
#   targets: [rootfs, image, host, facts]
#   requires: [cgroup]
package gpuhost.cgroup.v2

import data.gpuhost.lib.locate

deny contains finding if {
	input.cgroup.version != 2
	msg := sprintf("cgroup v%d is in use (from %s); want the unified cgroup v2 hierarchy", [input.cgroup.version, input.cgroup.source])
	finding := at_param(msg, "systemd.unified_cgroup_hierarchy")
}

# at_param places msg on the line of GRUB's defaults that set the kernel
# parameter; a hierarchy that systemd's default or a running host decided
# has no such line, and the message stands alone.
at_param(msg, param) := locate.at(msg, loc.file, loc.line) if {
	loc := input.kernel.cmdline_locations[param]
} else := msg
