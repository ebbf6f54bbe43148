# METADATA
# title: Audit records reach the remote params name
# description: >-
#   A host's own log can be erased by whoever took the host. When params.audit_remote names a log
#   host, the records must be forwarded to it: by audisp-remote (its plugin active, remote_server
#   that host) or by systemd-journal-upload (its unit enabled, its URL on that host). Skipped when
#   params name no remote.
# scope: package
# custom:
#   id: GH-AUD-006
#   severity: medium
#   location: /etc/audit/plugins.d/au-remote.conf
#   remediation: >-
#     Install audispd-plugins, set active = yes in /etc/audit/plugins.d/au-remote.conf and
#     remote_server = HOST in /etc/audit/audisp-remote.conf; or enable systemd-journal-upload with
#     URL= naming HOST (port 19532) in /etc/systemd/journal-upload.conf.
#   controls:
#     nist-800-53: [AU-4(1), AU-9(2)]
#     cis: ["6.2.1.3"]
#   targets: [rootfs, image, host, facts]
#   requires: [audit]
package gpuhost.audit.forwarded

remote := object.get(data.gpuhost.params, "audit_remote", "")

r := input.audit.remote

skip contains "params.audit_remote names no log host" if remote == ""

deny contains sprintf("audit records are not forwarded to %s (audisp-remote %s, journal upload %s)", [remote, audisp, upload]) if {
	remote != ""
	not via_audisp
	not via_journal
	audisp := describe(r.audisp_remote_active, object.get(r, "audisp_remote_server", ""))
	upload := describe(r.journal_upload, object.get(r, "journal_upload_url", ""))
}

via_audisp if {
	r.audisp_remote_active
	r.audisp_remote_server == remote
}

via_journal if {
	r.journal_upload
	host := split(trim_prefix(trim_prefix(r.journal_upload_url, "https://"), "http://"), ":")[0]
	host == remote
}

describe(true, to) := sprintf("active, to %q", [to])

describe(false, _) := "inactive"
