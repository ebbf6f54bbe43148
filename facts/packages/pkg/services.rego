# METADATA
# title: Services the hardening baseline requires are enabled, and those it forbids are not
# description: >-
#   A service that is installed but not enabled does not run after the next boot: cron,
#   the syslog daemon and time synchronisation must start with the host, and network
#   services a GPU host has no use for (avahi, CUPS, autofs) must not. Entries of
#   params.required_services may give alternatives ("chrony|ntp"); a service in
#   params.forbidden_services that is installed but not enabled passes. Judged from the
#   systemd units enabled in the target (the wants links of every target), offline and live.
# scope: package
# custom:
#   id: GH-PKG-003
#   severity: low
#   location: /etc/systemd/system
#   remediation: >-
#     Enable a required service ("systemctl enable SERVICE") and disable or mask a forbidden one
#     ("systemctl disable --now SERVICE", or purge its package) in the image build.
#   controls:
#     nist-800-53: [CM-7, AU-12]
#     cis-ubuntu-22.04: ["1.1.23", "2.2.1.1", "2.2.1.4", "2.2.3", "2.2.4", "4.2.1.2", "5.1.1"]
#   targets: [rootfs, image, host, facts]
#   requires: [systemd]
package gpuhost.pkg.services

import data.gpuhost.pkg.lib

required := object.get(data.gpuhost.params, "required_services", [])

forbidden := object.get(data.gpuhost.params, "forbidden_services", [])

skip contains "no systemd facts were collected" if not input.systemd

deny contains {"msg": msg, "subject": entry} if {
	input.systemd
	some entry in required
	names := lib.alternatives(entry)
	not any_enabled(names)
	msg := sprintf("%s is not enabled (params.required_services)", [concat(" or ", names)])
}

deny contains {"msg": msg, "subject": name} if {
	some name in forbidden
	name in lib.enabled
	msg := sprintf("%s is enabled (params.forbidden_services)", [name])
}

any_enabled(names) if {
	some n in names
	n in lib.enabled
}
