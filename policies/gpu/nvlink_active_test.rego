package gpuhost.gpu.nvlink_active_test

import data.gpuhost.gpu.nvlink_active as check

params := {"gpu_nvlink_links": {"A100-SXM4": 12, "H100": 18, "H100 PCIe": 0}}

links(n, down) := [{"link": l, "active": count({l} & down) == 0} | some l in numbers.range(0, n - 1)]

gpu(i, name, ls) := {"index": i, "uuid": sprintf("GPU-%d", [i]), "name": name, "nvlink": ls}

test_pass_all_active if {
	doc := {"gpu": {"devices": [gpu(0, "NVIDIA A100-SXM4-80GB", links(12, set())), gpu(1, "NVIDIA H100 80GB HBM3", links(18, set()))]}}
	msgs(check.deny) == set() with input as doc with data.gpuhost.params as params
	check.skip == set() with input as doc with data.gpuhost.params as params
}

test_fail_names_gpu_and_link if {
	doc := {"gpu": {"devices": [gpu(3, "NVIDIA A100-SXM4-80GB", links(12, {5}))]}}
	msgs(check.deny) == {"GPU 3 (GPU-3): NVLink 5 not active; 12 active links are wanted on NVIDIA A100-SXM4-80GB"} with input as doc with data.gpuhost.params as params
}

test_fail_missing_links if {
	doc := {"gpu": {"devices": [gpu(0, "NVIDIA H100 80GB HBM3", links(16, set()))]}}
	msgs(check.deny) == {"GPU 0 (GPU-0): NVLink 16, 17 not active; 18 active links are wanted on NVIDIA H100 80GB HBM3"} with input as doc with data.gpuhost.params as params
}

test_longest_key_wins if {
	doc := {"gpu": {"devices": [gpu(0, "NVIDIA H100 PCIe", [])]}}
	msgs(check.deny) == set() with input as doc with data.gpuhost.params as params
}

test_skip_no_match if {
	doc := {"gpu": {"devices": [gpu(0, "NVIDIA L4", [])]}}
	check.skip == {"no GPU's name matches a key of params.gpu_nvlink_links"} with input as doc with data.gpuhost.params as params
}

# msgs is the text of each finding: a string, or a finding object's msg.
msgs(findings) := {m | some f in findings; m := text(f)}

text(f) := f.msg if is_object(f)

text(f) := f if is_string(f)
