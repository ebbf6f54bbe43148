# METADATA
# title: GPU mode changes are recorded
# description: >-
#   nvidia-smi turns MIG and ECC on and off, resets GPUs and changes clocks and power limits;
#   nvidia-ctk rewrites the container runtime's GPU configuration. Each tool params.audit_gpu_tools
#   names must be watched for execution (-w PATH -p x) so that every such change leaves a record
#   naming who ran it. Read from the rules auditd loads.
# scope: package
# custom:
#   id: GH-AUD-004
#   severity: medium
#   location: /etc/audit/rules.d/audit.rules
#   remediation: >-
#     Add "-w /usr/bin/nvidia-smi -p x -k gpu-mode" and "-w /usr/bin/nvidia-ctk -p x -k gpu-mode" to
#     /etc/audit/rules.d/50-gpuhost.rules, then run augenrules --load.
#   controls:
#     nist-800-53: [AU-2, AU-12, CM-5]
#   targets: [rootfs, image, host, facts]
#   requires: [audit]
package gpuhost.audit.gpu_tools

import data.gpuhost.audit.lib

tools := object.get(data.gpuhost.params, "audit_gpu_tools", [])

skip contains "params.audit_gpu_tools names no tool" if count(tools) == 0

deny contains {"msg": sprintf("no audit rule records running %s (want -w %s -p x)", [t, t]), "subject": t} if {
	some t in tools
	not watched(t)
}

watched(t) if {
	some r in input.audit.rules
	lib.watches(r, t, "x")
}
