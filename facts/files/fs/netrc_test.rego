package gpuhost.fs.netrc_test

import data.gpuhost.fs.fixtures_test as fx
import data.gpuhost.fs.netrc

test_good_passes if {
	netrc.deny == set() with input as fx.with_files({})
}

test_netrc_fails if {
	netrc.deny == {{"msg": "/home/alice/.netrc holds passwords in the clear", "file": "/home/alice/.netrc", "subject": "/home/alice/.netrc"}} with input as fx.with_files({"trust_files": ["/home/alice/.netrc", "/home/.rhosts"]})
}

test_incomplete_homes_error if {
	netrc.error == {"the home directories were not read whole, so they cannot pass: listing /home: permission denied"} with input as fx.with_files({"homes_incomplete": "listing /home: permission denied"})
}
