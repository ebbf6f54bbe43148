package gpuhost.sb.host_tpm2_pcr7_test

import data.gpuhost.sb.fixtures_test as fx
import data.gpuhost.sb.host_tpm2_pcr7 as host

test_host_token_pcrs if {
	host.deny == set() with input as fx.luks_facts("host", fx.token([7]), [])
	host.deny == {{
		"msg": "the systemd-tpm2 token 0 of /dev/mapper/luks-3f1c (luks-3f1c) seals the key to PCRs [], without PCR 7 (the Secure Boot policy): the TPM2 unseals it whatever boot chain the firmware trusts",
		"file": "/etc/crypttab",
	}} with input as fx.luks_facts("host", fx.token([]), [])
}

test_signed_policy_pcr_7_counts if {
	f := fx.luks_facts("host", {"tokens": [{"id": "1", "type": "systemd-tpm2", "keyslots": ["1"], "tpm2_pubkey_pcrs": [7, 11]}]}, [])
	host.deny == set() with input as f
}

test_crypttab_tpm2_pcrs if {
	host.deny == set() with input as fx.luks_facts("host", {}, fx.crypttab_line(["luks", "tpm2-device=auto", "tpm2-pcrs=secure-boot-policy+kernel-boot"]))
	host.deny == set() with input as fx.luks_facts("host", {}, fx.crypttab_line(["tpm2-pcrs=0,7:sha256=3d45"]))
	host.deny == {{
		"msg": "/etc/crypttab's tpm2-pcrs= for luks-3f1c seals the key to PCRs [0, -1], without PCR 7 (the Secure Boot policy): the TPM2 unseals it whatever boot chain the firmware trusts",
		"file": "/etc/crypttab", "line": 3,
	}} with input as fx.luks_facts("host", {}, fx.crypttab_line(["tpm2-pcrs=0+kernel-boot"]))
}

test_skip_when_not_sealed_to_a_tpm2 if {
	host.skip == fx.not_sealed with input as fx.luks_facts("host", {"tokens": [{"id": "0", "type": "gpuhost-image-key", "keyslots": []}]}, [])
	host.skip == fx.not_sealed with input as {"target": {"kind": "host"}, "encryption": {"crypttab": [], "swap": []}}
}

test_error_token_unreadable if {
	f := fx.luks_facts("host", {"tokens": [{"id": "2", "type": "systemd-tpm2", "keyslots": ["1"], "error": "tpm2-pcrs: 31 is not a TPM2 PCR"}]}, [])
	host.error == {"the systemd-tpm2 token 2 of /dev/mapper/luks-3f1c (luks-3f1c) could not be read: tpm2-pcrs: 31 is not a TPM2 PCR"} with input as f
	host.skip == set() with input as f
}
