package gpuhost.gpu.validation_test

import data.gpuhost.gpu.validation as check

host(steps) := {"gpu": {"available": true, "devices": [], "validation": {"gpus": [], "steps": steps}}}

passed(name) := {"name": name, "status": "passed", "required": true, "reason": "ok"}

test_pass if {
	doc := host([passed("driver"), passed("container"), passed("cuda"), passed("mig")])
	check.deny == set() with input as doc
	check.error == set() with input as doc
}

test_not_required_not_run_passes if {
	doc := host([passed("driver"), {"name": "fabric", "status": "not_run", "required": false, "reason": "not an NVSwitch system"}])
	check.deny == set() with input as doc
	check.error == set() with input as doc
}

test_fail_names_the_gpu if {
	fabric := {"name": "fabric", "status": "failed", "required": true, "reason": "fabric registration failed on 1 of 2 GPUs", "gpus": [
		{"index": 0, "uuid": "GPU-0", "status": "passed", "detail": "fabric registration completed"},
		{"index": 1, "uuid": "GPU-1", "status": "failed", "detail": "fabric registration is still in progress"},
	]}
	check.deny == {{"msg": "step fabric: GPU 1 (GPU-1): fabric registration is still in progress", "subject": "GPU-1"}} with input as host([passed("driver"), fabric])
}

test_fail_step_without_gpus if {
	driver := {"name": "driver", "status": "failed", "required": true, "reason": "libnvidia-ml reports driver 550.54.15, but the loaded kernel module is 535.161.08"}
	check.deny == {"step driver failed: libnvidia-ml reports driver 550.54.15, but the loaded kernel module is 535.161.08"} with input as host([driver])
}

test_required_not_run_errors if {
	cuda := {"name": "cuda", "status": "not_run", "required": true, "reason": "no vectorAdd at /usr/lib/gpuhost/validate/vectorAdd"}
	check.error == {"step cuda did not run, and the node needs it: no vectorAdd at /usr/lib/gpuhost/validate/vectorAdd"} with input as host([passed("driver"), cuda])
	check.deny == set() with input as host([passed("driver"), cuda])
}

test_no_block_errors if {
	check.error == {"the gpu_validation collector recorded no validation"} with input as {"gpu": {"available": true, "devices": []}}
}

test_failure_outweighs_steps_it_kept_from_running if {
	driver := {"name": "driver", "status": "failed", "required": true, "reason": "NVML lists no GPUs"}
	mig := {"name": "mig", "status": "not_run", "required": true, "reason": "needs the GPUs the driver step lists, and it did not pass"}
	check.error == set() with input as host([driver, mig])
	check.deny == {"step driver failed: NVML lists no GPUs"} with input as host([driver, mig])
}
