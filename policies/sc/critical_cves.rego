# METADATA
# title: No fixable CVE at or above the configured severity outlives the grace period
# description: >-
#   Fails for every OS package finding at or above params.cve_fail_on (critical by default) that
#   has a fixed version and whose CVE was published more than params.cve_grace_days (14 by
#   default) before the scan. Age runs from the finding's published date, the NVD or GHSA
#   publication date the trivy DB carries, to target.scanned_at; a finding with no or an
#   unreadable published date counts as past the grace period, so a gap in the DB never passes.
#   Unfixed CVEs fail too when params.cve_ignore_unfixed is false; by default they do not, since
#   nothing can be installed for them. A finding of unknown severity counts as critical. Skips
#   when no trivy DB was given, so no vulnerability facts exist.
# scope: package
# custom:
#   id: GH-SC-001
#   severity: critical
#   location: /var/lib/dpkg/status
#   remediation: >-
#     Rebuild the image against a current mirror snapshot so the package is at or above the fixed
#     version ("apt-get install --only-upgrade PACKAGE"), or waive the finding with a
#     justification and an expiry while the upgrade is qualified.
#   controls:
#     nist-800-53: [RA-5, SI-2]
#   targets: [rootfs, image, host, facts]
#   requires: [vulnerabilities]
package gpuhost.sc.critical_cves

grace_days := object.get(data.gpuhost.params, "cve_grace_days", 14)

fail_on := lower(object.get(data.gpuhost.params, "cve_fail_on", "critical"))

ignore_unfixed := object.get(data.gpuhost.params, "cve_ignore_unfixed", true)

# Trivy's severities, most severe first; one it does not know ranks as
# critical, so a new label never passes unseen.
ranks := {"critical": 0, "high": 1, "medium": 2, "low": 3}

rank(sev) := ranks[lower(sev)]

rank(sev) := 0 if not ranks[lower(sev)]

day_ns := (24 * 60) * 60e9

# Age is measured to the scan, so a saved facts file judged later gives the
# same answer; a document without a readable scan time falls back to now.
scan_ns := time.parse_rfc3339_ns(input.target.scanned_at) if {
	regex.match(`^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$`, input.target.scanned_at)
} else := time.now_ns()

# CVEs published before this day are past the grace period. Dates compare
# as strings, so a finding's date is never parsed and a malformed one
# cannot abort the evaluation.
cutoff := sprintf("%04d-%02d-%02d", time.date(scan_ns - (grace_days * day_ns)))

findings := object.get(input, ["vulnerabilities", "findings"], [])

counted contains f if {
	some f in findings
	rank(object.get(f, "severity", "")) <= rank(fail_on)
	fix_matters(f)
}

fix_matters(f) if object.get(f, "fixed", "") != ""

fix_matters(_) if ignore_unfixed == false

published_day(f) := substring(f.published, 0, 10) if regex.match(`^[0-9]{4}-[0-9]{2}-[0-9]{2}`, f.published)

past_grace(f) if published_day(f) < cutoff

past_grace(f) if not published_day(f)

skip contains "no trivy DB was given, so there are no vulnerability facts" if not input.vulnerabilities

# Each finding names its CVE as its subject: a waiver with a cve list waives
# findings one by one, and the gate exports those as OpenVEX.
deny contains {"msg": msg, "subject": f.id} if {
	some f in counted
	past_grace(f)
	msg := sprintf("%s %s has %s %s, %s, %s", [f.package, f.installed, lower(object.get(f, "severity", "unknown")), f.id, fix_text(f), age_text(f)])
}

fix_text(f) := sprintf("fixed in %s", [f.fixed]) if object.get(f, "fixed", "") != ""

fix_text(f) := "with no fix yet" if object.get(f, "fixed", "") == ""

age_text(f) := sprintf("published %s, before the %d-day grace cutoff %s", [published_day(f), grace_days, cutoff])

age_text(f) := "with no readable published date" if not published_day(f)
