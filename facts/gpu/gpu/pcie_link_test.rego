package gpuhost.gpu.pcie_link_test

import data.gpuhost.gpu.pcie_link as check

host(gen, width) := {"gpu": {"available": true, "devices": [{"index": 7, "uuid": "GPU-7", "pcie": {"gen_current": gen, "gen_max": 4, "width_current": width, "width_max": 16}}]}}

test_pass if {
	msgs(check.deny) == set() with input as host(4, 16)
}

test_fail_width if {
	msgs(check.deny) == {"GPU 7 (GPU-7) PCIe link is degraded: Gen4 x8; the link can do Gen4 x16"} with input as host(4, 8)
}

test_fail_gen if {
	msgs(check.deny) == {"GPU 7 (GPU-7) PCIe link is degraded: Gen3 x16; the link can do Gen4 x16"} with input as host(3, 16)
}

test_skip_unavailable if {
	check.skip == {"NVML is unavailable: x"} with input as {"gpu": {"available": false, "reason": "x"}}
}

# msgs is the text of each finding: a string, or a finding object's msg.
msgs(findings) := {m | some f in findings; m := text(f)}

text(f) := f.msg if is_object(f)

text(f) := f if is_string(f)
