package gpuhost.sb.lockdown_test

import data.gpuhost.sb.fixtures_test as fx
import data.gpuhost.sb.lockdown

ld(mode) := fx.host({"lockdown": {"mode": mode, "source": "/sys/kernel/security/lockdown"}})

test_pass_integrity_or_confidentiality if {
	lockdown.deny == set() with input as ld("integrity")
	lockdown.deny == set() with input as ld("confidentiality")
	lockdown.error == set() with input as ld("integrity")
}

test_fail_none if {
	lockdown.deny == {"the kernel is not locked down (lockdown mode none): root can change the running kernel"} with input as ld("none")
}

test_skip_without_shim_or_live_facts if {
	lockdown.skip == {"the facts hold no lockdown mode: it is read only on a running host"} with input as fx.host({})
	count(lockdown.skip) == 1 with input as fx.facts("host", {"lockdown": {"mode": "none", "source": "/sys/kernel/security/lockdown"}})
}

test_error_unreadable if {
	lockdown.error == {"the lockdown mode could not be read: securityfs is not mounted"} with input as fx.host({"lockdown": {"mode": "", "source": "/sys/kernel/security/lockdown", "error": "securityfs is not mounted"}})
}
