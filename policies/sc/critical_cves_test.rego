package gpuhost.sc.critical_cves_test

import data.gpuhost.sc.critical_cves as check

params := {"cve_grace_days": 14}

finding(id, sev, fixed, published) := {"id": id, "package": "openssl", "installed": "3.0.11-1~deb12u2", "fixed": fixed, "severity": sev, "published": published}

doc(findings) := {
	"target": {"kind": "image", "scanned_at": "2024-07-31T00:00:00Z"},
	"vulnerabilities": {"db": "trivy-db v2 2024-07-30", "findings": findings},
}

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
	f := {"target": {"kind": "host"}, "vulnerabilities": {"db": "x", "findings": [finding("CVE-2020-0001", "CRITICAL", "1.1", "2020-01-01T00:00:00Z")]}}
	count(check.deny) == 1 with input as f with data.gpuhost.params as params
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
