package gpuhost.kernel.prelink_test

import data.gpuhost.kernel.prelink as check

test_pass if {
	check.deny == set() with input as {"packages": [{"name": "bash", "version": "5.1", "arch": "amd64", "held": false}]}
}

test_fail_installed if {
	check.deny == {{"msg": "prelink 0.0.20131005-1 is installed", "subject": "prelink", "file": "/var/lib/dpkg/status", "line": 120}} with input as {"packages": [{"name": "prelink", "version": "0.0.20131005-1", "arch": "amd64", "held": false, "line": 120}]}
	check.deny == {{"msg": "prelink 1 is installed", "subject": "prelink"}} with input as {"packages": [{"name": "prelink", "version": "1", "arch": "amd64", "held": false}]}
}
