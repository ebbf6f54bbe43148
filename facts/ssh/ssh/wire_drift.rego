# METADATA
# title: sshd offers what its configuration says
# description: >-
#   For every running sshd whose configuration sets Ciphers, KexAlgorithms or MACs, the list it
#   offers on the wire (its KEXINIT) must hold the same algorithms as the configuration file it was
#   started with. A difference means the file was edited and the daemon not reloaded (or the other
#   way round), so the file is not what runs. Keywords the file leaves unset are not compared,
#   because their defaults depend on the OpenSSH version.
# scope: package
# custom:
#   id: GH-SSH-007
#   severity: medium
#   location: /etc/ssh/sshd_config
#   remediation: >-
#     Check the file with "sshd -t -f FILE" and reload the daemon ("systemctl reload ssh"), or
#     restore the file the daemon runs with; then scan again.
#   controls:
#     nist-800-53: [CM-3, CM-6]
#   targets: [host, facts]
#   requires: [ssh]
package gpuhost.ssh.wire_drift

import data.gpuhost.ssh.lib

lists := {"ciphers": "Ciphers", "kex_algorithms": "KexAlgorithms", "macs": "MACs"}

read := [d | some d in lib.daemons; count(lib.wire(d)) > 0]

skip contains "no running sshd was read on the wire" if {
	count(read) == 0
	count({f | some d in lib.daemons; some f in lib.older(d)}) == 0
}

deny contains msg if {
	some d in read
	some field, keyword in lists
	lower(keyword) in object.get(d, "explicit", [])
	some w in lib.wire(d)
	file := {n | some n in object.get(d, field, [])}
	wire := {n | some n in object.get(w, field, [])}
	file != wire
	msg := sprintf("%s: %s in %s differ from what it offers on the wire at %s: only in the file [%s], only on the wire [%s]; reload it or restore the file", [
		lib.name(d), keyword, d.config_path, w.address,
		concat(", ", sort(file - wire)), concat(", ", sort(wire - file)),
	])
}

# The daemon runs an older configuration than the file judged above.
deny contains f if {
	some d in lib.daemons
	some f in lib.older(d)
}
