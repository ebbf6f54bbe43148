package gpuhost.fs.rsh_trust_test

import data.gpuhost.fs.fixtures_test as fx
import data.gpuhost.fs.rsh_trust

test_good_passes if {
	rsh_trust.deny == set() with input as fx.with_files({})
}

test_trust_files_fail if {
	t := ["/root/.rhosts", "/etc/hosts.equiv", "/home/alice/.rhosts", "/home/alice/.netrc"]
	rsh_trust.deny == {
		{"msg": "/root/.rhosts lets rsh in without a password", "file": "/root/.rhosts", "subject": "/root/.rhosts"},
		{"msg": "/etc/hosts.equiv lets rsh in without a password", "file": "/etc/hosts.equiv", "subject": "/etc/hosts.equiv"},
		{"msg": "/home/alice/.rhosts lets rsh in without a password", "file": "/home/alice/.rhosts", "subject": "/home/alice/.rhosts"},
	} with input as fx.with_files({"trust_files": t})
}

test_incomplete_homes_error if {
	rsh_trust.error == {"the home directories were not read whole, so they cannot pass: listing /home: permission denied"} with input as fx.with_files({"homes_incomplete": "listing /home: permission denied"})
}
