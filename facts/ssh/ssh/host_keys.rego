# METADATA
# title: sshd host keys are strong
# description: >-
#   Every host key sshd presents must be strong: an RSA key needs at least params.ssh_min_rsa_bits
#   bits (3072 by default, as ssh-audit asks), and no DSA key nor a host key algorithm in
#   params.ssh_weak_host_key_algorithms (ssh-rsa signs with SHA-1) may be offered. On a live host
#   the keys are fetched from the daemon on the wire (one handshake per key type, stopped before
#   any login); the public halves of the HostKey files are judged too.
# scope: package
# custom:
#   id: GH-SSH-009
#   severity: high
#   location: /etc/ssh/sshd_config
#   remediation: >-
#     Generate a new key ("ssh-keygen -t ed25519 -f /etc/ssh/ssh_host_ed25519_key", or "-t rsa -b 4096"),
#     remove the weak HostKey lines, set "HostKeyAlgorithms -ssh-rsa,ssh-dss" if needed, and restart ssh.
#   controls:
#     nist-800-53: [IA-3, SC-12, SC-13]
#   targets: [rootfs, image, host, facts]
#   requires: [ssh]
package gpuhost.ssh.host_keys

import data.gpuhost.ssh.lib

deny contains "parameter ssh_min_rsa_bits is not set" if not data.gpuhost.params.ssh_min_rsa_bits

deny contains "parameter ssh_weak_host_key_algorithms is not set" if not data.gpuhost.params.ssh_weak_host_key_algorithms

deny contains msg if {
	some d in lib.daemons
	some k in object.get(d, "host_keys", [])
	k.type == "ssh-rsa"
	k.bits < data.gpuhost.params.ssh_min_rsa_bits
	msg := sprintf("%s has an RSA host key of %d bits %s; want at least %d", [lib.name(d), k.bits, where(k), data.gpuhost.params.ssh_min_rsa_bits])
}

deny contains msg if {
	some d in lib.daemons
	some k in object.get(d, "host_keys", [])
	k.type == "ssh-dss"
	msg := sprintf("%s has a DSA host key %s", [lib.name(d), where(k)])
}

deny contains msg if {
	some d in lib.daemons
	some o in lib.offered(d, "host_key_algorithms")
	lib.matches(o.name, data.gpuhost.params.ssh_weak_host_key_algorithms)
	msg := sprintf("%s offers weak host key algorithm %s %s", [lib.name(d), o.name, o.where])
}

where(k) := sprintf("on the wire at %s", [k.address]) if k.source == "wire"

where(k) := sprintf("in %s", [k.file]) if k.source == "file"
