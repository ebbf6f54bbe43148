package gpuhost.sb.tpm2_test

import data.gpuhost.sb.fixtures_test as fx
import data.gpuhost.sb.tpm2

test_hop_names if {
	tpm2.name({"device": "dm-0"}) == "dm-0"
	tpm2.name({"device": "dm-0", "name": "root"}) == "dm-0 (root)"
}

test_pcr_lists_as_systemd_reads_them if {
	tpm2.pcr_list("7") == [7]
	tpm2.pcr_list("0+7") == [0, 7]
	tpm2.pcr_list("secure-boot-policy,kernel-boot") == [7, -1]
	tpm2.pcr_list("7:sha256=3d45+") == [7]
}

test_bindings_found if {
	count(tpm2.bindings) == 2 with input as fx.luks_facts("image", object.union(fx.first_boot([7]), fx.token([0])), [])
	count(tpm2.missing_7) == 1 with input as fx.luks_facts("image", object.union(fx.first_boot([7]), fx.token([0])), [])
}
