package gpuhost.enc.lib_test

import data.gpuhost.enc.lib

root_luks := {"device": "dm-0", "kind": "crypt", "name": "gpuhost-root", "learned": "sysfs", "depth": 0, "crypt": {"type": "luks2"}}

swap_luks := {"device": "dm-2", "kind": "crypt", "learned": "sysfs", "depth": 0, "crypt": {"type": "luks1"}}

plain := {"device": "dm-1", "kind": "crypt", "name": "scratch", "learned": "sysfs", "depth": 0, "crypt": {"type": "plain"}}

test_luks_hops_under_root_and_swap if {
	f := {"encryption": {"root": {"hops": [root_luks, {"device": "vda4", "kind": "partition", "depth": 1}]}, "swap": [{"hops": [swap_luks, plain]}]}}
	lib.luks_hops == {root_luks, swap_luks} with input as f
}

test_no_luks_hops_without_encryption_facts if {
	lib.luks_hops == set() with input as {}
}

test_name if {
	lib.name(root_luks) == "dm-0 (gpuhost-root)"
	lib.name(swap_luks) == "dm-2"
}

test_live if {
	lib.live with input as {"target": {"kind": "host"}}
	not lib.live with input as {"target": {"kind": "image"}}
}
