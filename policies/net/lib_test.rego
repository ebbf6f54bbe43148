package gpuhost.net.lib_test

import data.gpuhost.net.lib

test_loopback if {
	lib.loopback("127.0.0.53")
	lib.loopback("::1")
	lib.loopback("::ffff:127.0.0.1")
	not lib.loopback("0.0.0.0")
	not lib.loopback("::")
}

test_owner if {
	lib.owner("sshd") == " (sshd)"
	lib.owner("") == ""
}

test_firewall_none_is_null if {
	lib.firewall == null with input as {"network": {"firewall": {"backend": "none"}}}
	lib.firewall == null with input as {}
	lib.firewall.backend == "ufw" with input as {"network": {"firewall": {"backend": "ufw"}}}
}
