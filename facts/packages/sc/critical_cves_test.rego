package gpuhost.sc.critical_cves_test

import data.gpuhost.sc.critical_cves as check

params := {"cve_grace_days": 14}

finding(id, sev, fixed, published) := {"id": id, "package": "openssl", "installed": "3.0.11-1~deb12u2", "fixed": fixed, "severity": sev, "published": published}

doc(findings) := {
	"target": {"kind": "image", "scanned_at": "2024-07-31T00:00:00Z"},
	"vulnerabilities": {
		"db": "trivy-db v2 2024-07-30",
		"db_updated_at": "2024-07-30T06:00:00Z",
		"db_next_update": "2024-07-31T06:00:00Z",
		"findings": findings,
	},
}

# dated is doc over a DB built at updated and due at next (null: not said).
dated(findings, updated, next) := {
	"target": {"kind": "image", "scanned_at": "2024-07-31T00:00:00Z"},
	"vulnerabilities": object.filter(
		{"db": "trivy-db v2", "db_updated_at": updated, "db_next_update": next, "findings": findings},
		[k | some k in ["db", "db_updated_at", "db_next_update", "findings"]; not null_at(k, updated, next)],
	),
}

null_at("db_updated_at", null, _)

null_at("db_next_update", _, null)

demo(f) := json.patch(f, [{"op": "add", "path": "/vulnerabilities/db_demo", "value": true}])

label := " (demo vulnerability DB: not for release gating)"

test_pass_within_grace_unfixed_or_not_critical if {
	f := doc([
		finding("CVE-2024-0001", "CRITICAL", "3.0.14-1", "2024-07-20T00:00:00Z"),
		finding("CVE-2024-0002", "CRITICAL", "", "2023-01-01T00:00:00Z"),
		finding("CVE-2024-0003", "HIGH", "3.0.14-1", "2023-01-01T00:00:00Z"),
	])
	check.deny == set() with input as f with data.gpuhost.params as params
	check.skip == set() with input as f with data.gpuhost.params as params
}

test_fail_past_grace if {
	f := doc([finding("CVE-2024-5535", "CRITICAL", "3.0.14-1~deb12u1", "2024-06-27T11:15:00Z")])
	check.deny == {{"msg": "openssl 3.0.11-1~deb12u2 has critical CVE-2024-5535, fixed in 3.0.14-1~deb12u1, published 2024-06-27, before the 14-day grace cutoff 2024-07-17", "subject": "CVE-2024-5535"}} with input as f with data.gpuhost.params as params
}

test_grace_is_a_param if {
	f := doc([finding("CVE-2024-5535", "critical", "3.0.14-1~deb12u1", "2024-06-27T11:15:00Z")])
	check.deny == set() with input as f with data.gpuhost.params as {"cve_grace_days": 60}
}

test_fail_closed_without_published_date if {
	f := doc([
		{"id": "CVE-2024-0004", "package": "zlib1g", "installed": "1:1.2.13.dfsg-1", "fixed": "1:1.2.13.dfsg-2", "severity": "CRITICAL"},
		finding("CVE-2024-0005", "CRITICAL", "3.0.14-1", "last tuesday"),
	])
	check.deny == {
		{"msg": "zlib1g 1:1.2.13.dfsg-1 has critical CVE-2024-0004, fixed in 1:1.2.13.dfsg-2, with no readable published date", "subject": "CVE-2024-0004"},
		{"msg": "openssl 3.0.11-1~deb12u2 has critical CVE-2024-0005, fixed in 3.0.14-1, with no readable published date", "subject": "CVE-2024-0005"},
	} with input as f with data.gpuhost.params as params
}

test_no_scan_time_uses_now if {
	f := {"target": {"kind": "host"}, "vulnerabilities": {"db": "x", "db_updated_at": "2020-01-02T00:00:00Z", "findings": [finding("CVE-2020-0001", "CRITICAL", "1.1", "2020-01-01T00:00:00Z")]}}
	{f.subject | some f in check.deny} == {"CVE-2020-0001", "trivy-db"} with input as f with data.gpuhost.params as params
}

test_skip_without_db if {
	f := {"target": {"kind": "image", "scanned_at": "2024-07-31T00:00:00Z"}}
	check.skip == {"no trivy DB was given, so there are no vulnerability facts"} with input as f with data.gpuhost.params as params
	check.deny == set() with input as f with data.gpuhost.params as params
}

test_fail_on_is_a_param if {
	f := doc([
		finding("CVE-2024-0003", "HIGH", "3.0.14-1", "2023-01-01T00:00:00Z"),
		finding("CVE-2024-0006", "MEDIUM", "3.0.14-1", "2023-01-01T00:00:00Z"),
	])
	check.deny == {{"msg": "openssl 3.0.11-1~deb12u2 has high CVE-2024-0003, fixed in 3.0.14-1, published 2023-01-01, before the 14-day grace cutoff 2024-07-17", "subject": "CVE-2024-0003"}} with input as f
		with data.gpuhost.params as {"cve_grace_days": 14, "cve_fail_on": "high"}
}

test_unfixed_counts_when_not_ignored if {
	f := doc([finding("CVE-2024-0002", "CRITICAL", "", "2023-01-01T00:00:00Z")])
	check.deny == set() with input as f with data.gpuhost.params as params
	check.deny == {{"msg": "openssl 3.0.11-1~deb12u2 has critical CVE-2024-0002, with no fix yet, published 2023-01-01, before the 14-day grace cutoff 2024-07-17", "subject": "CVE-2024-0002"}} with input as f
		with data.gpuhost.params as {"cve_grace_days": 14, "cve_ignore_unfixed": false}
}

test_unknown_severity_counts_as_critical if {
	f := doc([finding("CVE-2024-0007", "SEVERE", "3.0.14-1", "2023-01-01T00:00:00Z")])
	count(check.deny) == 1 with input as f with data.gpuhost.params as params
}

test_db_at_the_age_limit_passes if {
	# 7 days and 23 hours before the scan is 7 whole days.
	f := dated([], "2024-07-23T01:00:00Z", null)
	check.deny == set() with input as f with data.gpuhost.params as params
	check.error == set() with input as f with data.gpuhost.params as params
}

test_db_past_the_age_limit_fails if {
	f := dated([], "2024-07-19T09:30:00Z", null)
	check.deny == {{"msg": "the vulnerability DB is 11 days old (updated 2024-07-19), older than cve_max_db_age_days 7: update it", "subject": "trivy-db"}} with input as f with data.gpuhost.params as params
}

test_db_one_day_past_the_limit_fails if {
	f := dated([], "2024-07-23T00:00:00Z", null)
	check.deny == {{"msg": "the vulnerability DB is 8 days old (updated 2024-07-23), older than cve_max_db_age_days 7: update it", "subject": "trivy-db"}} with input as f with data.gpuhost.params as params
}

test_db_age_is_a_param if {
	f := dated([], "2024-07-19T09:30:00Z", null)
	check.deny == set() with input as f with data.gpuhost.params as {"cve_grace_days": 14, "cve_max_db_age_days": 30}
	count(check.deny) == 1 with input as f with data.gpuhost.params as {"cve_grace_days": 14, "cve_max_db_age_days": 10}
}

test_db_at_its_next_update_passes if {
	f := dated([], "2024-07-30T00:00:00Z", "2024-07-31T00:00:00Z")
	check.deny == set() with input as f with data.gpuhost.params as params
}

test_db_past_its_next_update_fails if {
	f := dated([], "2024-07-29T23:59:00Z", "2024-07-30T23:59:59Z")
	check.deny == {{"msg": "the vulnerability DB was due for replacement at 2024-07-30T23:59:59Z (its NextUpdate), before the scan at 2024-07-31T00:00:00Z: update it", "subject": "trivy-db"}} with input as f with data.gpuhost.params as params
}

test_db_stale_both_ways_fails_twice if {
	f := dated([], "2024-07-01T00:00:00Z", "2024-07-02T00:00:00Z")
	count(check.deny) == 2 with input as f with data.gpuhost.params as params
}

test_db_without_build_time_errors if {
	f := dated([finding("CVE-2024-0001", "CRITICAL", "3.0.14-1", "2024-07-20T00:00:00Z")], null, "2024-08-01T00:00:00Z")
	check.error == {"the vulnerability DB (trivy-db v2) does not say when it was built (no readable UpdatedAt in its metadata.json), so its age cannot be judged: use trivy's own DB (trivy image --download-db-only)"} with input as f with data.gpuhost.params as params
	check.deny == set() with input as f with data.gpuhost.params as params
}

test_db_with_unreadable_build_time_errors if {
	f := dated([], "2024-02-30T00:00:00Z x", null)
	count(check.error) == 1 with input as f with data.gpuhost.params as params
}

test_demo_db_labels_every_message if {
	stale := demo(dated([finding("CVE-2024-5535", "CRITICAL", "3.0.14-1~deb12u1", "2024-06-27T11:15:00Z")], "2024-07-01T00:00:00Z", null))
	check.deny == {
		{"msg": concat("", ["the vulnerability DB is 30 days old (updated 2024-07-01), older than cve_max_db_age_days 7: update it", label]), "subject": "trivy-db"},
		{"msg": concat("", ["openssl 3.0.11-1~deb12u2 has critical CVE-2024-5535, fixed in 3.0.14-1~deb12u1, published 2024-06-27, before the 14-day grace cutoff 2024-07-17", label]), "subject": "CVE-2024-5535"},
	} with input as stale with data.gpuhost.params as params
	undated := demo(dated([], null, null))
	{m | some m in check.error; endswith(m, label)} == check.error with input as undated with data.gpuhost.params as params
	count(check.error) == 1 with input as undated with data.gpuhost.params as params
}

test_fresh_demo_db_passes if {
	f := demo(doc([]))
	check.deny == set() with input as f with data.gpuhost.params as params
	check.error == set() with input as f with data.gpuhost.params as params
}

seeded(img) := json.patch(doc([]), [{"op": "add", "path": "/vulnerabilities/images", "value": [img]}])

base := {"ref": "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", "digest": "sha256:abc"}

test_fail_seeded_image_past_grace_by_digest if {
	f := seeded(object.union(base, {"findings": [
		finding("CVE-2024-5535", "CRITICAL", "3.0.14-1~deb12u1", "2024-06-27T11:15:00Z"),
		finding("CVE-2024-0001", "CRITICAL", "3.0.14-1", "2024-07-20T00:00:00Z"),
	]}))
	check.deny == {{"msg": "seeded image nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04@sha256:abc: openssl 3.0.11-1~deb12u2 has critical CVE-2024-5535, fixed in 3.0.14-1~deb12u1, published 2024-06-27, before the 14-day grace cutoff 2024-07-17", "subject": "CVE-2024-5535"}} with input as f with data.gpuhost.params as params
	check.error == set() with input as f with data.gpuhost.params as params
}

test_pass_seeded_image_clean if {
	f := seeded(object.union(base, {"findings": []}))
	check.deny == set() with input as f with data.gpuhost.params as params
	check.error == set() with input as f with data.gpuhost.params as params
}

test_error_seeded_image_not_matched if {
	f := demo(seeded(object.union(base, {"findings": [], "error": "opening sha256:abc: reading os-release: file does not exist"})))
	check.error == {sprintf("seeded image nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04@sha256:abc could not be matched against the vulnerability DB: opening sha256:abc: reading os-release: file does not exist%s", [label])} with input as f with data.gpuhost.params as params
}

test_error_seeded_images_not_listed if {
	f := json.patch(doc([]), [{"op": "add", "path": "/vulnerabilities/images_error", "value": "the pre-seeded container images were not listed: the containers collector is error: boom"}])
	check.error == {"the pre-seeded container images were not listed: the containers collector is error: boom, so no seeded image was matched against the vulnerability DB"} with input as f with data.gpuhost.params as params
}
