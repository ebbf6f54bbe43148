package gpuhost.pin.lib_test

import data.gpuhost.pin.lib

test_at_places_a_package_on_its_line if {
	lib.at({"name": "a", "line": 12}, "m") == {"msg": "m", "file": "/var/lib/dpkg/status", "line": 12}
}

test_at_leaves_a_package_without_a_line_alone if {
	lib.at({"name": "a"}, "m") == "m"
	lib.at({"name": "a", "line": 0}, "m") == "m"
}
