package gpuhost.lib.locate_test

import data.gpuhost.lib.locate

test_at_places_a_message_on_its_line if {
	locate.at("m", "/etc/fstab", 3) == {"msg": "m", "file": "/etc/fstab", "line": 3}
}

test_at_leaves_a_message_without_a_line_alone if {
	locate.at("m", "/etc/fstab", 0) == "m"
	locate.at("m", "", 0) == "m"
}

test_place_is_empty_without_a_line if {
	locate.place("/etc/nftables.conf", 6) == {"file": "/etc/nftables.conf", "line": 6}
	locate.place("/etc/nftables.conf", 0) == {}
}
