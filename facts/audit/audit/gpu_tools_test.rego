package gpuhost.audit.gpu_tools_test

import data.gpuhost.audit.fixtures_test as fx
import data.gpuhost.audit.gpu_tools

test_hardened_passes if {
	gpu_tools.deny == set() with input as {"audit": {"rules": fx.hardened}} with data.gpuhost.params as fx.params
}

test_no_rules_fail if {
	count(gpu_tools.deny) == 1 with input as {"audit": {"rules": []}} with data.gpuhost.params as fx.params
}

test_empty_params_skip if {
	gpu_tools.skip == {"params.audit_gpu_tools names no tool"} with data.gpuhost.params as {}
}
