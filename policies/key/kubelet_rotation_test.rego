package gpuhost.key.kubelet_rotation_test

import data.gpuhost.key.kubelet_rotation as check

k := {"config_path": "/var/lib/kubelet/config.yaml", "rotate_certificates": true, "server_tls_bootstrap": true}

test_rotating_passes if {
	check.deny == set() with input as {"kubelet": k}
}

test_no_rotation_fails_both if {
	count(check.deny) == 2 with input as {"kubelet": object.union(k, {"rotate_certificates": false, "server_tls_bootstrap": false})}
}
