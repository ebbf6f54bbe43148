package gpuhost.tls.nginx_protocols_test

import data.gpuhost.tls.nginx_protocols as check

params := {"weak_tls_protocols": ["SSLv2", "SSLv3", "TLSv1", "TLSv1.1", "TLSv1.2"]}

facts(nginx) := {"target": {"kind": "image"}, "tls": {"nginx": nginx, "probes": []}}

test_pass_tls13_only if {
	f := facts([
		{"file": "/etc/nginx/nginx.conf", "line": 30, "protocols": ["TLSv1.3"]},
		{"file": "/etc/nginx/sites-enabled/default", "line": 12, "protocols": ["TLSv1.3"]},
	])
	check.deny == set() with input as f with data.gpuhost.params as params
	check.skip == set() with input as f with data.gpuhost.params as params
}

test_fail_weak_protocols if {
	f := facts([
		{"file": "/etc/nginx/nginx.conf", "line": 30, "protocols": ["TLSv1.1", "TLSv1.2", "TLSv1.3"]},
		{"file": "/etc/nginx/sites-enabled/default", "line": 12, "protocols": ["TLSv1.3"]},
	])
	check.deny == {
		{"msg": "/etc/nginx/nginx.conf:30: ssl_protocols enables TLSv1.1", "file": "/etc/nginx/nginx.conf", "line": 30, "subject": "TLSv1.1"},
		{"msg": "/etc/nginx/nginx.conf:30: ssl_protocols enables TLSv1.2", "file": "/etc/nginx/nginx.conf", "line": 30, "subject": "TLSv1.2"},
	} with input as f with data.gpuhost.params as params
}

test_fail_no_protocols if {
	f := facts([{"file": "/etc/nginx/sites-enabled/api", "line": 4, "protocols": []}])
	check.deny == {{
		"msg": "/etc/nginx/sites-enabled/api:4: no protocols recorded for this TLS server; nginx's default enables TLS 1.2 and older",
		"file": "/etc/nginx/sites-enabled/api", "line": 4,
	}} with input as f
		with data.gpuhost.params as params
}

test_skip_without_nginx if {
	check.skip == {"nginx has no TLS configuration"} with input as facts([]) with data.gpuhost.params as params
	check.skip == {"nginx has no TLS configuration"} with input as {"target": {"kind": "host"}, "tls": {}} with data.gpuhost.params as params
}

test_fail_closed_without_params if {
	check.deny == {"parameter weak_tls_protocols is not set"} with input as facts([{"file": "/etc/nginx/nginx.conf", "line": 1, "protocols": ["TLSv1.3"]}])
		with data.gpuhost.params as {}
}
