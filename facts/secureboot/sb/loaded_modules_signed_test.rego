package gpuhost.sb.loaded_modules_signed_test

import data.gpuhost.sb.fixtures_test as fx
import data.gpuhost.sb.loaded_modules_signed as modules

test_loaded_modules_pass if {
	f := fx.host(object.union(fx.fw({}), {"modules": [
		fx.loaded("nvidia", {}),
		# Signed by a key only the kernel's built-in keyring holds: the kernel verified it.
		fx.loaded("vendor", {"verified_by": "", "signer": "Vendor", "error": "x is signed by \"Vendor\" (key 1), which is none of the trusted keys"}),
	]}))
	modules.deny == set() with input as f
	modules.skip == set() with input as f
	modules.error == set() with input as f
}

test_loaded_modules_fail if {
	f := fx.host(object.union(fx.fw({}), {"modules": [
		fx.loaded("nvidia_uvm", {"taint": "OE", "verified_by": "", "error": "x is signed by \"someone else\" (key 1), which is none of the trusted keys"}),
		fx.loaded("unsigned", {"taint": "O", "signed": false, "verified_by": ""}),
		fx.loaded("changed", {"verified_by": "", "error": "the signature of /lib/modules/6.1.0-28-amd64/updates/dkms/changed.ko does not verify with the certificate MokListRT: crypto/rsa: verification error"}),
		# An offline module in saved facts is not a loaded one.
		fx.module("offline", {"signed": false}),
	]}))
	modules.deny == {
		{"msg": "module nvidia_uvm was loaded without a signature the kernel could verify with a key it trusts (taint OE)", "subject": "nvidia_uvm"},
		{"msg": "module unsigned (/lib/modules/6.1.0-28-amd64/updates/dkms/unsigned.ko) carries no module signature", "file": "/lib/modules/6.1.0-28-amd64/updates/dkms/unsigned.ko"},
		{
			"msg": "module changed: the signature of /lib/modules/6.1.0-28-amd64/updates/dkms/changed.ko does not verify with the certificate MokListRT: crypto/rsa: verification error",
			"file": "/lib/modules/6.1.0-28-amd64/updates/dkms/changed.ko",
		},
	} with input as f
}

test_loaded_module_file_unreadable if {
	f := fx.host(object.union(fx.fw({}), {"modules": [fx.loaded("nvidia", {"signed": false, "verified_by": "", "error": "reading the module: permission denied"})]}))
	modules.error == {{
		"msg": "the file of module nvidia could not be read: reading the module: permission denied",
		"file": "/lib/modules/6.1.0-28-amd64/updates/dkms/nvidia.ko",
	}} with input as f
	modules.deny == set() with input as f
}

test_loaded_modules_skip_and_error if {
	modules.skip == {"the facts hold no loaded modules' state: it is read only on a running host"} with input as fx.host({})
	count(modules.skip) == 1 with input as fx.facts("host", fx.fw({}))
	modules.error == {"the loaded out-of-tree modules could not all be read: reading the loaded modules: permission denied"} with input as fx.host(object.union(fx.fw({}), {"modules_error": "reading the loaded modules: permission denied"}))
}
