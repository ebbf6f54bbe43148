# METADATA
# title: No fixable CVE at or above the configured severity outlives the grace period
# description: >-
#   Fails for every OS package finding at or above params.cve_fail_on (critical by default) that
#   has a fixed version and whose CVE was published more than params.cve_grace_days (14 by
#   default) before the scan, counted from the published date the trivy DB carries; a finding
#   with no readable date counts as past the grace period. Unfixed CVEs fail too when
#   params.cve_ignore_unfixed is false. A finding of unknown severity counts as critical. A clean
#   match against a stale DB proves nothing: the check also fails when the DB is older than
#   params.cve_max_db_age_days (7 by default) or the scan comes after the DB's NextUpdate, and
#   errors when the DB does not say when it was built. Seeded NGC bases are matched the same
#   way from their own layers, named by reference and digest; one that could not be matched is
#   an error. A demo DB labels every message "demo vulnerability DB: not for release gating".
#   Skips when no trivy DB was given.
# scope: package
# custom:
#   id: GH-SC-001
#   severity: critical
#   location: /var/lib/dpkg/status
#   remediation: >-
#     Rebuild the image against a current mirror snapshot so the package is at or above the fixed
#     version ("apt-get install --only-upgrade PACKAGE"), or waive the finding with a
#     justification and an expiry while the upgrade is qualified. For a stale DB, fetch trivy's
#     current one ("trivy image --download-db-only") before the scan.
#   controls:
#     nist-800-53: [RA-5, SI-2]
#   targets: [rootfs, image, host, facts]
#   requires: [vulnerabilities]
package gpuhost.sc.critical_cves

grace_days := object.get(data.gpuhost.params, "cve_grace_days", 14)

fail_on := lower(object.get(data.gpuhost.params, "cve_fail_on", "critical"))

ignore_unfixed := object.get(data.gpuhost.params, "cve_ignore_unfixed", true)

max_db_age_days := object.get(data.gpuhost.params, "cve_max_db_age_days", 7)

# Trivy's severities, most severe first; one it does not know ranks as
# critical, so a new label never passes unseen.
ranks := {"critical": 0, "high": 1, "medium": 2, "low": 3}

rank(sev) := ranks[lower(sev)]

rank(sev) := 0 if not ranks[lower(sev)]

day_ns := (24 * 60) * 60e9

rfc3339 := `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$`

# The facts schema holds these times to RFC 3339; the pattern keeps a
# document that was not validated from reaching the parser, whose error
# aborts the whole evaluation under strict builtin errors.
time_ns(s) := time.parse_rfc3339_ns(s) if {
	is_string(s)
	regex.match(rfc3339, s)
}

# Age is measured to the scan, so a saved facts file judged later gives the
# same answer; a document without a readable scan time falls back to now.
scan_ns := t if {
	t := time_ns(input.target.scanned_at)
} else := time.now_ns()

default scan_text := "this scan"

scan_text := sprintf("the scan at %s", [input.target.scanned_at]) if time_ns(input.target.scanned_at)

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

db := object.get(input, "vulnerabilities", {})

demo if db.db_demo == true

default label := ""

label := " (demo vulnerability DB: not for release gating)" if demo

db_updated_ns := time_ns(object.get(db, "db_updated_at", null))

db_next_ns := time_ns(object.get(db, "db_next_update", null))

# The pre-seeded bases are judged as the image is, finding by finding, and
# named by reference and digest: the digest is what runs, whatever the tag
# says later.
images := object.get(db, "images", [])

image_counted contains [img, f] if {
	some img in images
	some f in object.get(img, "findings", [])
	rank(object.get(f, "severity", "")) <= rank(fail_on)
	fix_matters(f)
}

# A DB that does not say when it was built could be years behind; a pass
# over it would be a guess.
error contains msg if {
	input.vulnerabilities
	not db_updated_ns
	msg := sprintf(
		"the vulnerability DB (%s) does not say when it was built (no readable UpdatedAt in its metadata.json), %s%s",
		[object.get(db, "db", ""), "so its age cannot be judged: use trivy's own DB (trivy image --download-db-only)", label],
	)
}

# A base that could not be matched has unknown findings; bases that could
# not be listed leave every one unknown.
error contains msg if {
	some img in images
	object.get(img, "error", "") != ""
	msg := sprintf("seeded image %s@%s could not be matched against the vulnerability DB: %s%s", [img.ref, img.digest, img.error, label])
}

error contains msg if {
	object.get(db, "images_error", "") != ""
	msg := sprintf("%s, so no seeded image was matched against the vulnerability DB%s", [db.images_error, label])
}

# Whole days, as the limit is counted: a DB 7 days and some hours old is 7
# days old, and passes a limit of 7.
db_age_days := floor((scan_ns - db_updated_ns) / day_ns)

# The DB's findings are a subject of their own, which no CVE waiver can
# name: waiving every CVE must not waive the staleness that hid others.
deny contains {"msg": msg, "subject": "trivy-db"} if {
	db_age_days > max_db_age_days
	msg := sprintf(
		"the vulnerability DB is %d days old (updated %s), older than cve_max_db_age_days %d: update it%s",
		[db_age_days, substring(db.db_updated_at, 0, 10), max_db_age_days, label],
	)
}

deny contains {"msg": msg, "subject": "trivy-db"} if {
	scan_ns > db_next_ns
	msg := sprintf("the vulnerability DB was due for replacement at %s (its NextUpdate), before %s: update it%s", [db.db_next_update, scan_text, label])
}

# Each finding names its CVE as its subject: a waiver with a cve list waives
# findings one by one, and the gate exports those as OpenVEX.
deny contains {"msg": msg, "subject": f.id} if {
	some f in counted
	past_grace(f)
	msg := sprintf("%s %s has %s %s, %s, %s%s", [f.package, f.installed, lower(object.get(f, "severity", "unknown")), f.id, fix_text(f), age_text(f), label])
}

deny contains {"msg": msg, "subject": f.id} if {
	some [img, f] in image_counted
	past_grace(f)
	msg := sprintf(
		"seeded image %s@%s: %s %s has %s %s, %s, %s%s",
		[img.ref, img.digest, f.package, f.installed, lower(object.get(f, "severity", "unknown")), f.id, fix_text(f), age_text(f), label],
	)
}

fix_text(f) := sprintf("fixed in %s", [f.fixed]) if object.get(f, "fixed", "") != ""

fix_text(f) := "with no fix yet" if object.get(f, "fixed", "") == ""

age_text(f) := sprintf("published %s, before the %d-day grace cutoff %s", [published_day(f), grace_days, cutoff])

age_text(f) := "with no readable published date" if not published_day(f)
