package gpuhost.tls.openssl_min_protocol_test

import data.gpuhost.tls.openssl_min_protocol as check

params := {"weak_tls_protocols": ["SSLv2", "SSLv3", "TLSv1", "TLSv1.1", "TLSv1.2"]}

facts(openssl) := {"target": {"kind": "rootfs"}, "tls": {"openssl": openssl, "nginx": [], "probes": []}}

test_pass_tls13 if {
	check.deny == set() with input as facts({"config_path": "/etc/ssl/openssl.cnf", "min_protocol": "TLSv1.3", "max_protocol": ""})
		with data.gpuhost.params as params
}

test_pass_case_insensitive if {
	check.deny == set() with input as facts({"config_path": "/etc/ssl/openssl.cnf", "min_protocol": "tlsv1.3", "max_protocol": ""})
		with data.gpuhost.params as params
}

test_fail_tls12 if {
	check.deny == {"/etc/ssl/openssl.cnf sets MinProtocol = TLSv1.2, which is a weak protocol; want TLSv1.3"} with input as facts({"config_path": "/etc/ssl/openssl.cnf", "min_protocol": "TLSv1.2", "max_protocol": ""})
		with data.gpuhost.params as params
}

test_fail_tls12_names_the_line if {
	check.deny == {{"msg": "/etc/ssl/openssl.cnf.d/legacy.cnf:3 sets MinProtocol = TLSv1.2, which is a weak protocol; want TLSv1.3", "file": "/etc/ssl/openssl.cnf.d/legacy.cnf", "line": 3}} with input as facts({"config_path": "/etc/ssl/openssl.cnf", "min_protocol": "TLSv1.2", "max_protocol": "", "min_protocol_file": "/etc/ssl/openssl.cnf.d/legacy.cnf", "min_protocol_line": 3})
		with data.gpuhost.params as params
}

test_fail_unset_min if {
	check.deny == {"/etc/ssl/openssl.cnf sets no MinProtocol in system_default: the library default allows TLS 1.2"} with input as facts({"config_path": "/etc/ssl/openssl.cnf", "min_protocol": "", "max_protocol": ""})
		with data.gpuhost.params as params
}

test_fail_no_config if {
	check.deny == {"no system OpenSSL configuration sets MinProtocol: the library default allows TLS 1.2"} with input as {"target": {"kind": "image"}, "tls": {"nginx": [], "probes": []}}
		with data.gpuhost.params as params
}

test_site_allows_tls12 if {
	check.deny == set() with input as facts({"config_path": "/etc/ssl/openssl.cnf", "min_protocol": "", "max_protocol": ""})
		with data.gpuhost.params as {"weak_tls_protocols": ["SSLv3", "TLSv1", "TLSv1.1"]}
}

test_fail_closed_without_params if {
	check.deny == {"parameter weak_tls_protocols is not set"} with input as facts({"config_path": "/etc/ssl/openssl.cnf", "min_protocol": "TLSv1.3", "max_protocol": ""})
		with data.gpuhost.params as {}
}
