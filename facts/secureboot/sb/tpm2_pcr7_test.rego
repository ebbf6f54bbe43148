package gpuhost.sb.tpm2_pcr7_test

import data.gpuhost.sb.fixtures_test as fx
import data.gpuhost.sb.tpm2_pcr7 as check

test_pass_image_first_boot_seals_to_7 if {
	f := fx.luks_facts("image", fx.first_boot([7]), [])
	check.deny == set() with input as f
	check.skip == set() with input as f
	check.error == set() with input as f
}

test_fail_image_first_boot_without_7 if {
	check.deny == {{
		"msg": "the first-boot TPM2 enrolment of /dev/mapper/luks-3f1c (luks-3f1c) (/etc/gpuhost/luks-enroll.conf) seals the key to PCRs [0, 2], without PCR 7 (the Secure Boot policy): the TPM2 unseals it whatever boot chain the firmware trusts",
		"file": "/etc/gpuhost/luks-enroll.conf",
	}} with input as fx.luks_facts("image", fx.first_boot([0, 2]), [])
}

test_skip_when_not_sealed_to_a_tpm2 if {
	check.skip == fx.not_sealed with input as fx.luks_facts("image", {}, [])
}

test_error_first_boot_unreadable if {
	g := fx.luks_facts("image", {"first_boot_tpm2": {"file": "/etc/gpuhost/luks-enroll.conf", "pcrs": null, "error": "TPM2_PCRS: \"seven\" is not a PCR"}}, [])
	check.error == {"the first-boot TPM2 enrolment of /dev/mapper/luks-3f1c (luks-3f1c) (/etc/gpuhost/luks-enroll.conf) could not be read: TPM2_PCRS: \"seven\" is not a PCR"} with input as g
}
