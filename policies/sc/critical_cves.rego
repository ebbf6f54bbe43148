# METADATA
# title: No fixable critical CVE outlives the grace period
# description: >-
#   Fails for every OS package finding of severity CRITICAL that has a fixed version and whose CVE
#   was published more than params.cve_grace_days (14 by default) before the scan. Age runs from
#   the finding's published date, the NVD or GHSA publication date the trivy DB carries, to
#   target.scanned_at; a finding with no or an unreadable published date counts as past the grace
#   period, so a gap in the DB never passes. Unfixed CVEs do not fail here: nothing can be
#   installed for them. Skips when no trivy DB was given, so no vulnerability facts exist.
# scope: package
# custom:
#   id: GH-SC-001
#   severity: critical
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

fixable_critical contains f if {
	some f in findings
	lower(f.severity) == "critical"
	object.get(f, "fixed", "") != ""
}

published_day(f) := substring(f.published, 0, 10) if regex.match(`^[0-9]{4}-[0-9]{2}-[0-9]{2}`, f.published)

past_grace(f) if published_day(f) < cutoff

past_grace(f) if not published_day(f)

skip contains "no trivy DB was given, so there are no vulnerability facts" if not input.vulnerabilities

deny contains msg if {
	some f in fixable_critical
	past_grace(f)
	msg := sprintf("%s %s has critical %s, fixed in %s, %s", [f.package, f.installed, f.id, f.fixed, age_text(f)])
}

age_text(f) := sprintf("published %s, before the %d-day grace cutoff %s", [published_day(f), grace_days, cutoff])

age_text(f) := "with no readable published date" if not published_day(f)
