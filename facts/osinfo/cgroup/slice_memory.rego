# METADATA
# title: The slices params name carry a memory limit
# description: >-
#   params.slice_memory_limits names the top-level systemd slices that must carry MemoryMax= or
#   MemoryHigh=, so that (for example) user sessions on a shared GPU node cannot take the memory
#   the system and the workloads need. Read from the slices' cgroups on a live host and from their
#   unit files and drop-ins in an image. Skipped when params name no slice.
# scope: package
# custom:
#   id: GH-CGR-004
#   severity: medium
#   location: /etc/systemd/system/user.slice.d/50-memory.conf
#   remediation: >-
#     Add a drop-in such as /etc/systemd/system/user.slice.d/50-memory.conf with "[Slice]" and
#     "MemoryMax=32G" (or MemoryHigh=), then run "systemctl daemon-reload".
#   controls:
#     nist-800-53: [SC-6]
#   targets: [rootfs, image, host, facts]
#   requires: [cgroup]
package gpuhost.cgroup.slice_memory

wanted := object.get(data.gpuhost.params, "slice_memory_limits", [])

skip contains "params.slice_memory_limits names no slice" if count(wanted) == 0

error contains sprintf("the slices' memory limits were not read (cgroup v%d on a live host)", [input.cgroup.version]) if {
	count(wanted) > 0
	not input.cgroup.memory
}

unlimited(v) if v in {"", "max", "infinity"}

deny contains {"msg": msg, "subject": name} if {
	some name in wanted
	some s in input.cgroup.memory.slices
	s.name == name
	unlimited(s.memory_max)
	unlimited(s.memory_high)
	msg := sprintf("%s has no memory limit (MemoryMax %q, MemoryHigh %q, from %s)", [name, s.memory_max, s.memory_high, s.source])
}

deny contains {"msg": msg, "subject": name} if {
	input.cgroup.memory
	some name in wanted
	not name in {s.name | some s in input.cgroup.memory.slices}
	msg := sprintf("%s was not found, so it has no memory limit", [name])
}
