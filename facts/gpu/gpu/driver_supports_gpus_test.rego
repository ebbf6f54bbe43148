package gpuhost.gpu.driver_supports_gpus_test

import data.gpuhost.gpu.driver_supports_gpus as check

h200 := {"index": 0, "uuid": "GPU-0", "name": "NVIDIA H200", "architecture": "hopper", "min_driver_branch": 535, "open_module_supported": true}

b200 := {"index": 1, "uuid": "GPU-1", "name": "NVIDIA B200", "architecture": "blackwell", "min_driver_branch": 570, "open_module_supported": true, "open_module_required": true}

v100 := {"index": 2, "uuid": "GPU-2", "name": "Tesla V100", "architecture": "volta", "min_driver_branch": 384, "open_module_supported": false}

host(branch, flavor, devs) := {"gpu": {"available": true, "driver_branch": branch, "kernel_module_type": flavor, "devices": devs}}

test_pass if {
	msgs(check.deny) == set() with input as host(550, "proprietary", [h200]) with data.gpuhost.params as {}
	msgs(check.deny) == set() with input as host(570, "open", [b200]) with data.gpuhost.params as {}
	msgs(check.deny) == set() with input as host(525, "open", [h200]) with data.gpuhost.params as {"gpu_driver_version": "550.54.15"}
}

test_fail_branch_running if {
	msgs(check.deny) == {"GPU 0 (GPU-0) (NVIDIA H200, hopper) needs driver branch 535 or newer; the running branch is 525"} with input as host(525, "proprietary", [h200]) with data.gpuhost.params as {}
}

test_fail_branch_pinned if {
	msgs(check.deny) == {"GPU 1 (GPU-1) (NVIDIA B200, blackwell) needs driver branch 570 or newer; the pinned branch is 550"} with input as host(570, "open", [b200]) with data.gpuhost.params as {"gpu_driver_version": "550.54.15"}
}

test_fail_flavor if {
	msgs(check.deny) == {"GPU 1 (GPU-1) (NVIDIA B200, blackwell) runs only on the open kernel modules; the proprietary module is loaded"} with input as host(570, "proprietary", [b200]) with data.gpuhost.params as {}
	msgs(check.deny) == {"GPU 2 (GPU-2) (Tesla V100, volta) is not supported by the open kernel modules, which are loaded"} with input as host(550, "open", [v100]) with data.gpuhost.params as {}
}

test_skip_unavailable if {
	check.skip == {"NVML is unavailable: x"} with input as {"gpu": {"available": false, "reason": "x"}} with data.gpuhost.params as {}
}

test_pass_flavor_unknown if {
	msgs(check.deny) == set() with input as {"gpu": {"available": true, "driver_branch": 570, "devices": [b200, v100]}} with data.gpuhost.params as {}
}

# msgs is the text of each finding: a string, or a finding object's msg.
msgs(findings) := {m | some f in findings; m := text(f)}

text(f) := f.msg if is_object(f)

text(f) := f if is_string(f)
