package gpuhost.sb.modules_signed_test

import data.gpuhost.sb.fixtures_test as fx
import data.gpuhost.sb.modules_signed as check

test_pass_modules_signed_with_the_dkms_key if {
	f := fx.facts("image", {"boot_files": [fx.shim], "modules": [fx.module("nvidia", {}), fx.module("nvidia_uvm", {})], "trusted_keys": [fx.dkms_key]})
	check.deny == set() with input as f
	check.error == set() with input as f
	check.skip == set() with input as f
}

test_skip_without_shim if {
	count(check.skip) == 1 with input as fx.facts("image", {"modules": [fx.module("nvidia", {"signed": false, "verified_by": ""})]})
}

test_fail_unsigned_tampered_and_foreign if {
	f := fx.facts("image", {"boot_files": [fx.shim], "trusted_keys": [fx.dkms_key], "modules": [
		fx.module("unsigned", {"signed": false, "verified_by": "", "signer": "", "key_id": ""}),
		fx.module("tampered", {"verified_by": "", "error": "the signature of /lib/modules/6.1.0-28-amd64/updates/dkms/tampered.ko does not verify with the certificate /var/lib/dkms/mok.pub: crypto/rsa: verification error"}),
		fx.module("other", {"verified_by": "", "signer": "someone else", "error": "/lib/modules/6.1.0-28-amd64/updates/dkms/other.ko is signed by \"someone else\" (key 1A), which is none of the trusted keys"}),
	]})
	check.deny == {
		{"msg": "/lib/modules/6.1.0-28-amd64/updates/dkms/unsigned.ko (unsigned) carries no module signature: under Secure Boot the kernel refuses it", "file": "/lib/modules/6.1.0-28-amd64/updates/dkms/unsigned.ko"},
		{"msg": "/lib/modules/6.1.0-28-amd64/updates/dkms/tampered.ko (tampered): the signature of /lib/modules/6.1.0-28-amd64/updates/dkms/tampered.ko does not verify with the certificate /var/lib/dkms/mok.pub: crypto/rsa: verification error", "file": "/lib/modules/6.1.0-28-amd64/updates/dkms/tampered.ko"},
		{"msg": "/lib/modules/6.1.0-28-amd64/updates/dkms/other.ko (other): /lib/modules/6.1.0-28-amd64/updates/dkms/other.ko is signed by \"someone else\" (key 1A), which is none of the trusted keys", "file": "/lib/modules/6.1.0-28-amd64/updates/dkms/other.ko"},
	} with input as f
}

test_fail_without_a_dkms_certificate if {
	f := fx.facts("image", {"boot_files": [fx.shim], "modules": [fx.module("nvidia", {"verified_by": "", "error": "x is signed by \"DKMS module signing key\" (key 79:1C), which is none of the trusted keys"})]})
	"the image has 1 out-of-tree modules and no DKMS certificate (/var/lib/dkms/mok.pub) to enrol: no key a host trusts verifies them" in check.deny with input as f
}

test_fail_key_not_enrolled if {
	f := fx.facts("facts", {"boot_files": [fx.shim], "modules": [fx.module("nvidia", {})], "trusted_keys": [object.union(fx.dkms_key, {"enrolled": false})]})
	check.deny == {{"msg": "/lib/modules/6.1.0-28-amd64/updates/dkms/nvidia.ko (nvidia) is signed by /var/lib/dkms/mok.pub, which is not enrolled", "file": "/lib/modules/6.1.0-28-amd64/updates/dkms/nvidia.ko"}} with input as f
}

test_error_unreadable_module if {
	f := fx.facts("image", {"boot_files": [fx.shim], "trusted_keys": [fx.dkms_key], "modules": [
		fx.module("big", {"signed": false, "verified_by": "", "error": "reading the module: file exceeds read limit"}),
	]})
	check.error == {{
		"msg": "/lib/modules/6.1.0-28-amd64/updates/dkms/big.ko (big) could not be read: reading the module: file exceeds read limit",
		"file": "/lib/modules/6.1.0-28-amd64/updates/dkms/big.ko",
	}} with input as f
	check.deny == set() with input as f
}

test_error_unreadable if {
	f := fx.facts("image", {"boot_files": [fx.shim], "modules_error": "more than 512 out-of-tree modules under /lib/modules", "trusted_keys": [
		{"source": "/var/lib/dkms/mok.pub", "enrolled": false, "error": "parsing the certificate /var/lib/dkms/mok.pub: x509: malformed certificate"},
	]})
	check.error == {
		"the out-of-tree modules could not all be read: more than 512 out-of-tree modules under /lib/modules",
		"the trusted key /var/lib/dkms/mok.pub could not be read: parsing the certificate /var/lib/dkms/mok.pub: x509: malformed certificate",
	} with input as f
}
