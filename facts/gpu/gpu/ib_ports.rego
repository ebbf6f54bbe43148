# METADATA
# title: Every InfiniBand port is up at its rate, and not flapping
# description: >-
#   A GPU node's RDMA ports carry its share of every multi-node job: one port down or trained to
#   a lower rate slows the whole job to it, and a link that keeps going down stalls it. Each port
#   under /sys/class/infiniband must be ACTIVE and LinkUp, at least params.ib_min_rate_gbps when
#   that is set, and down no more than params.ib_link_downed_max times when that is set. Ports in
#   params.ib_ports_ignored ("mlx5_0/2") are not judged: an HCA's unused second port is one.
# scope: package
# custom:
#   id: GH-GPU-027
#   severity: high
#   location: /sys/class/infiniband
#   remediation: >-
#     Read ibstat (or the port's state, phys_state and rate in sysfs): reseat or replace the cable
#     or transceiver, check the switch port and the subnet manager, and drain the node until the
#     port is up at its rate. A port that is not cabled on purpose goes in params.ib_ports_ignored.
#   controls:
#     nist-800-53: [SC-5, SI-4]
#   targets: [host, facts]
#   requires: [infiniband]
package gpuhost.gpu.ib_ports

default ignored := []

ignored := data.gpuhost.params.ib_ports_ignored

default min_rate := null

min_rate := data.gpuhost.params.ib_min_rate_gbps

default downed_max := null

downed_max := data.gpuhost.params.ib_link_downed_max

ports := [p |
	# regal ignore:pointless-reassignment
	skip := ignored
	some p in input.infiniband.ports
	not sprintf("%s/%d", [p.device, p.port]) in skip
]

name(p) := sprintf("%s/%d", [p.device, p.port])

error contains {"msg": msg, "subject": name(p)} if {
	some p in ports
	object.get(p, "error", "") != ""
	msg := sprintf("InfiniBand port %s could not be read: %s", [name(p), p.error])
}

deny contains {"msg": msg, "subject": name(p)} if {
	some p in ports
	object.get(p, "error", "") == ""
	not up(p)
	msg := sprintf("InfiniBand port %s is %s (%s), not ACTIVE (LinkUp)", [name(p), p.state, p.phys_state])
}

deny contains {"msg": msg, "subject": name(p)} if {
	# regal ignore:pointless-reassignment
	want := min_rate
	want != null
	some p in ports
	up(p)
	p.rate_gbps < want
	msg := sprintf("InfiniBand port %s runs at %v Gb/s, below params.ib_min_rate_gbps (%v)", [name(p), p.rate_gbps, want])
}

deny contains {"msg": msg, "subject": name(p)} if {
	# regal ignore:pointless-reassignment
	bound := downed_max
	bound != null
	some p in ports
	p.link_downed > bound
	msg := sprintf("InfiniBand port %s went down %d times, above params.ib_link_downed_max (%d)", [name(p), p.link_downed, bound])
}

up(p) if {
	p.state == "ACTIVE"
	p.phys_state == "LinkUp"
}
