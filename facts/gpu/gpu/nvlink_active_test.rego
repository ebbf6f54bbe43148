package gpuhost.gpu.nvlink_active_test

import data.gpuhost.gpu.nvlink_active as check

# The shipped table: every product's healthy hardware must pass under it.
params := yaml.unmarshal(`
gpu_nvlink_links:
  "NVIDIA A100-SXM4-80GB": {links: 12, mode: fixed}
  "NVIDIA A100 80GB PCIe": {links: 12, mode: bridge}
  "NVIDIA H100 80GB HBM3": {links: 18, mode: fixed}
  "NVIDIA H100 PCIe": {links: 12, mode: bridge}
  "NVIDIA H100 NVL": {links: 12, mode: bridge}
  "NVIDIA H200": {links: 18, mode: fixed}
  "NVIDIA H200 NVL": {links: 18, mode: bridge}
  "NVIDIA GH200 480GB": {links: 18, mode: bridge}
  "NVIDIA L40S": {links: 0, mode: none}
  "Tesla T4": {links: 0, mode: none}
`)

links(n, down) := [{"link": l, "active": count({l} & down) == 0} | some l in numbers.range(0, n - 1)]

# inactive is how NVML lists the links of a card with no bridge fitted.
inactive(n) := [{"link": l, "active": false} | some l in numbers.range(0, n - 1)]

gpu(i, name, ls) := {"index": i, "uuid": sprintf("GPU-%d", [i]), "name": name, "nvlink": ls}

host(devices) := {"gpu": {"devices": devices}}

test_healthy_a100_sxm if {
	msgs(check.deny) == set() with input as host([gpu(0, "NVIDIA A100-SXM4-80GB", links(12, set())), gpu(1, "NVIDIA A100-SXM4-80GB", links(12, set()))]) with data.gpuhost.params as params
	check.skip == set() with input as host([gpu(0, "NVIDIA A100-SXM4-80GB", links(12, set())), gpu(1, "NVIDIA A100-SXM4-80GB", links(12, set()))]) with data.gpuhost.params as params
}

test_healthy_a100_pcie_bridged_and_not if {
	msgs(check.deny) == set() with input as host([gpu(0, "NVIDIA A100 80GB PCIe", links(12, set()))]) with data.gpuhost.params as params
	check.skip == set() with input as host([gpu(0, "NVIDIA A100 80GB PCIe", links(12, set()))]) with data.gpuhost.params as params
	msgs(check.deny) == set() with input as host([gpu(0, "NVIDIA A100 80GB PCIe", inactive(12))]) with data.gpuhost.params as params
	check.skip == set() with input as host([gpu(0, "NVIDIA A100 80GB PCIe", inactive(12))]) with data.gpuhost.params as params
	msgs(check.deny) == set() with input as host([gpu(0, "NVIDIA A100 80GB PCIe", [])]) with data.gpuhost.params as params
	check.skip == set() with input as host([gpu(0, "NVIDIA A100 80GB PCIe", [])]) with data.gpuhost.params as params
}

test_healthy_h100_sxm if {
	msgs(check.deny) == set() with input as host([gpu(0, "NVIDIA H100 80GB HBM3", links(18, set()))]) with data.gpuhost.params as params
	check.skip == set() with input as host([gpu(0, "NVIDIA H100 80GB HBM3", links(18, set()))]) with data.gpuhost.params as params
}

test_healthy_h100_pcie_bridged_and_not if {
	msgs(check.deny) == set() with input as host([gpu(0, "NVIDIA H100 PCIe", links(12, set()))]) with data.gpuhost.params as params
	check.skip == set() with input as host([gpu(0, "NVIDIA H100 PCIe", links(12, set()))]) with data.gpuhost.params as params
	msgs(check.deny) == set() with input as host([gpu(0, "NVIDIA H100 PCIe", inactive(18))]) with data.gpuhost.params as params
	check.skip == set() with input as host([gpu(0, "NVIDIA H100 PCIe", inactive(18))]) with data.gpuhost.params as params
}

# An H100 NVL pair's bridges carry 12 of the die's 18 links: the other six
# are listed but never wired.
test_healthy_h100_nvl_pair if {
	msgs(check.deny) == set() with input as host([gpu(0, "NVIDIA H100 NVL", links(18, {12, 13, 14, 15, 16, 17})), gpu(1, "NVIDIA H100 NVL", links(18, {12, 13, 14, 15, 16, 17}))]) with data.gpuhost.params as params
	check.skip == set() with input as host([gpu(0, "NVIDIA H100 NVL", links(18, {12, 13, 14, 15, 16, 17})), gpu(1, "NVIDIA H100 NVL", links(18, {12, 13, 14, 15, 16, 17}))]) with data.gpuhost.params as params
}

test_healthy_h200_sxm if {
	msgs(check.deny) == set() with input as host([gpu(0, "NVIDIA H200", links(18, set()))]) with data.gpuhost.params as params
	check.skip == set() with input as host([gpu(0, "NVIDIA H200", links(18, set()))]) with data.gpuhost.params as params
}

# The old table's "H200" key matched these by substring and wanted 18 fixed
# links of each.
test_healthy_h200_nvl_bridged_and_not if {
	msgs(check.deny) == set() with input as host([gpu(0, "NVIDIA H200 NVL", links(18, set())), gpu(1, "NVIDIA H200 NVL", links(18, set()))]) with data.gpuhost.params as params
	check.skip == set() with input as host([gpu(0, "NVIDIA H200 NVL", links(18, set())), gpu(1, "NVIDIA H200 NVL", links(18, set()))]) with data.gpuhost.params as params
	msgs(check.deny) == set() with input as host([gpu(0, "NVIDIA H200 NVL", inactive(18))]) with data.gpuhost.params as params
	check.skip == set() with input as host([gpu(0, "NVIDIA H200 NVL", inactive(18))]) with data.gpuhost.params as params
}

test_healthy_gh200_alone if {
	msgs(check.deny) == set() with input as host([gpu(0, "NVIDIA GH200 480GB", inactive(18))]) with data.gpuhost.params as params
	check.skip == set() with input as host([gpu(0, "NVIDIA GH200 480GB", inactive(18))]) with data.gpuhost.params as params
}

test_healthy_gh200_nvl2 if {
	msgs(check.deny) == set() with input as host([gpu(0, "NVIDIA GH200 480GB", links(18, set()))]) with data.gpuhost.params as params
	check.skip == set() with input as host([gpu(0, "NVIDIA GH200 480GB", links(18, set()))]) with data.gpuhost.params as params
}

test_healthy_l40s_and_t4 if {
	msgs(check.deny) == set() with input as host([gpu(0, "NVIDIA L40S", [])]) with data.gpuhost.params as params
	check.skip == set() with input as host([gpu(0, "NVIDIA L40S", [])]) with data.gpuhost.params as params
	msgs(check.deny) == set() with input as host([gpu(0, "Tesla T4", [])]) with data.gpuhost.params as params
	check.skip == set() with input as host([gpu(0, "Tesla T4", [])]) with data.gpuhost.params as params
}

test_name_case_and_spaces_aside if {
	msgs(check.deny) == set() with input as host([gpu(0, " nvidia h200 ", links(18, set()))]) with data.gpuhost.params as params
	check.skip == set() with input as host([gpu(0, " nvidia h200 ", links(18, set()))]) with data.gpuhost.params as params
}

test_fail_names_gpu_and_link if {
	doc := host([gpu(3, "NVIDIA A100-SXM4-80GB", links(12, {5}))])
	msgs(check.deny) == {"GPU 3 (GPU-3): NVLink 5 not active; 12 active links are wanted on NVIDIA A100-SXM4-80GB"} with input as doc with data.gpuhost.params as params
}

test_fail_missing_links if {
	doc := host([gpu(0, "NVIDIA H100 80GB HBM3", links(16, set()))])
	msgs(check.deny) == {"GPU 0 (GPU-0): NVLink 16, 17 not active; 18 active links are wanted on NVIDIA H100 80GB HBM3"} with input as doc with data.gpuhost.params as params
}

test_fail_degraded_h200_sxm if {
	doc := host([gpu(0, "NVIDIA H200", links(18, {0}))])
	msgs(check.deny) == {"GPU 0 (GPU-0): NVLink 0 not active; 18 active links are wanted on NVIDIA H200"} with input as doc with data.gpuhost.params as params
}

test_fail_degraded_h200_nvl_bridge if {
	doc := host([gpu(2, "NVIDIA H200 NVL", links(18, {4, 9}))])
	msgs(check.deny) == {"GPU 2 (GPU-2): 16 of the 18 NVLinks a bridged NVIDIA H200 NVL has are active (NVLink 4, 9 not active); reseat or replace its bridges"} with input as doc with data.gpuhost.params as params
}

test_fail_degraded_h100_pcie_bridge if {
	doc := host([gpu(0, "NVIDIA H100 PCIe", links(12, {0, 1, 2, 3}))])
	count(check.deny) == 1 with input as doc with data.gpuhost.params as params
}

test_fail_degraded_gh200_nvl2 if {
	doc := host([gpu(0, "NVIDIA GH200 480GB", links(18, {17}))])
	count(check.deny) == 1 with input as doc with data.gpuhost.params as params
}

test_bare_number_is_fixed if {
	doc := host([gpu(0, "NVIDIA H100 80GB HBM3", links(18, {1}))])
	count(check.deny) == 1 with input as doc with data.gpuhost.params as {"gpu_nvlink_links": {"NVIDIA H100 80GB HBM3": 18}}
}

test_prefixed_name_matches_its_product if {
	doc := host([gpu(3, "Mock NVIDIA A100-SXM4-80GB", links(12, {5}))])
	msgs(check.deny) == {"GPU 3 (GPU-3): NVLink 5 not active; 12 active links are wanted on Mock NVIDIA A100-SXM4-80GB"} with input as doc with data.gpuhost.params as params
}

test_no_substring_match if {
	doc := host([gpu(0, "NVIDIA H200 NVL", inactive(18)), gpu(1, "NVIDIA GH200 480GB", inactive(18)), gpu(2, "NVIDIA H2000", [])])
	check.skip == {"no GPU's name is a key of params.gpu_nvlink_links"} with input as doc with data.gpuhost.params as {"gpu_nvlink_links": {"NVIDIA H200": {"links": 18, "mode": "fixed"}}}
	check.deny == set() with input as doc with data.gpuhost.params as {"gpu_nvlink_links": {"NVIDIA H200": {"links": 18, "mode": "fixed"}}}
}

test_skip_no_match if {
	doc := host([gpu(0, "NVIDIA L4", [])])
	check.skip == {"no GPU's name is a key of params.gpu_nvlink_links"} with input as doc with data.gpuhost.params as params
}

# msgs is the text of each finding: a string, or a finding object's msg.
msgs(findings) := {m | some f in findings; m := text(f)}

text(f) := f.msg if is_object(f)

text(f) := f if is_string(f)
