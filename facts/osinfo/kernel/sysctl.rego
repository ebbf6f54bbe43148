# METADATA
# title: Kernel parameters have the benchmark's values
# description: >-
#   Every kernel parameter params.sysctl_values names must have its value (CIS Ubuntu 22.04 sections 1.6
#   and 3.2-3.3 by default: no IP forwarding or redirects, no source routing, reverse path filtering,
#   martians logged, SYN cookies, no router advertisements, ASLR, no setuid core dumps). In an image,
#   the value the sysctl.d files and /etc/sysctl.conf set, in systemd-sysctl's order (the last
#   assignment wins; a glob sets what no line names): a parameter left at the kernel's default fails,
#   as OpenSCAP fails it. On a live host the value the running kernel holds (/proc/sys) too; a finding
#   says which of the two differs.
# scope: package
# custom:
#   id: GH-KRN-002
#   severity: medium
#   location: /etc/sysctl.d/60-cis.conf
#   remediation: >-
#     Set each parameter in a file such as /etc/sysctl.d/60-cis.conf ("net.ipv4.ip_forward = 0"), remove or
#     override the lines that set it otherwise, and apply it with "sysctl --system". A host that routes
#     (a Kubernetes node forwards pod traffic) takes net.ipv4.ip_forward and
#     net.ipv6.conf.all.forwarding out of params.sysctl_values rather than waive the check.
#   controls:
#     cis-ubuntu-22.04: ["1.6.2", "1.6.4", "3.2.1", "3.2.2", "3.3.1", "3.3.2", "3.3.3", "3.3.4", "3.3.5", "3.3.6", "3.3.7", "3.3.8", "3.3.9"]
#     nist-800-53: [CM-6, CM-7, SC-5, SC-7]
#   targets: [rootfs, image, host, facts]
#   requires: [sysctl]
package gpuhost.kernel.sysctl

import data.gpuhost.kernel.lib

wanted := object.get(data.gpuhost.params, "sysctl_values", {})

skip contains "params.sysctl_values names no kernel parameter" if count(wanted) == 0

deny contains object.union({"msg": msg, "subject": key}, lib.place(key)) if {
	some key, want in wanted
	msg := lib.problem(key, sprintf("%v", [want]))
}
