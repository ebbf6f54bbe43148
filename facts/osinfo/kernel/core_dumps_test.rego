package gpuhost.kernel.core_dumps_test

import data.gpuhost.kernel.core_dumps as check

entry(domain, type, item, value, file, line) := {"domain": domain, "type": type, "item": item, "value": value, "file": file, "line": line}

suid(value) := {"files": [], "configured": {"fs.suid_dumpable": {"value": value, "file": "/etc/sysctl.d/60-cis.conf", "line": 1}}, "globs": [], "excluded": {}}

doc(entries, sysctl) := {"limits": {"files": [], "entries": entries}, "sysctl": sysctl}

by_subject(findings) := {f.subject: f | some f in findings}

test_pass if {
	check.deny == set() with input as doc([entry("*", "hard", "core", "0", "/etc/security/limits.conf", 50)], suid("0"))
	check.deny == set() with input as doc(
		[
			entry("*", "hard", "core", "unlimited", "/etc/security/limits.conf", 50),
			entry("*", "-", "core", "0", "/etc/security/limits.d/60-cis.conf", 1),
		],
		suid("0"),
	)
}

test_fail_no_limit_and_suid_dumpable if {
	f := by_subject(check.deny) with input as doc([entry("*", "soft", "core", "0", "/etc/security/limits.conf", 50), entry("root", "hard", "core", "0", "/etc/security/limits.conf", 51)], suid("2"))
	f["* hard core"].msg == `no line of /etc/security/limits.conf or limits.d sets "* hard core 0", so every login may dump core`
	f["fs.suid_dumpable"] == {
		"msg": "fs.suid_dumpable is configured 2 at /etc/sysctl.d/60-cis.conf:1; want 0",
		"subject": "fs.suid_dumpable", "file": "/etc/sysctl.d/60-cis.conf", "line": 1,
	}
}

test_fail_last_line_wins if {
	f := by_subject(check.deny) with input as doc(
		[
			entry("*", "hard", "core", "0", "/etc/security/limits.conf", 50),
			entry("*", "hard", "core", "1024", "/etc/security/limits.d/90-x.conf", 3),
		],
		suid("0"),
	)
	f == {"* hard core": {"msg": "everyone's hard core size limit is 1024 (/etc/security/limits.d/90-x.conf:3); want 0", "subject": "* hard core", "file": "/etc/security/limits.d/90-x.conf", "line": 3}}
}

test_live_running_suid_dumpable if {
	sysctl := object.union(suid("0"), {"running": {"fs.suid_dumpable": "1"}})
	f := by_subject(check.deny) with input as doc([entry("*", "hard", "core", "0", "/etc/security/limits.conf", 50)], sysctl)
	f["fs.suid_dumpable"].msg == "fs.suid_dumpable differs in the running kernel: it is configured 0 at /etc/sysctl.d/60-cis.conf:1 and runs as 1; want 0"
}
