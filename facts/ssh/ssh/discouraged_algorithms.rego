# METADATA
# title: sshd offers no algorithms ssh-audit warns about
# description: >-
#   sshd should not offer key exchanges on the NIST P-curves (ecdh-sha2-nistp*), ECDSA host keys
#   (ecdsa-sha2-nistp*), nor the other names in params.ssh_discouraged_kex,
#   params.ssh_discouraged_host_key_algorithms and params.ssh_discouraged_macs, which ssh-audit
#   flags. On a live host the lists are those the daemon offers on the wire; otherwise its
#   configuration (host key algorithms then come from the host key files it names, those of types
#   its HostKeyAlgorithms lets sshd present).
# scope: package
# custom:
#   id: GH-SSH-008
#   severity: low
#   location: /etc/ssh/sshd_config
#   remediation: >-
#     Remove them, e.g. "KexAlgorithms -ecdh-sha2-nistp*", "HostKeyAlgorithms -ecdsa-sha2-nistp*" and
#     no ECDSA HostKey line in /etc/ssh/sshd_config; check with "sshd -T" and reload ssh.
#   controls:
#     nist-800-53: [SC-13]
#   targets: [rootfs, image, host, facts]
#   requires: [ssh]
package gpuhost.ssh.discouraged_algorithms

import data.gpuhost.ssh.lib

# Each list is read by its constant key, so that the pack's tooling (the
# catalog, the unknown-params check) sees which parameters the check reads.
params := {
	"kex_algorithms": [data.gpuhost.params.ssh_discouraged_kex, "key exchange"],
	"macs": [data.gpuhost.params.ssh_discouraged_macs, "MAC"],
}

deny contains "parameter ssh_discouraged_kex is not set" if not data.gpuhost.params.ssh_discouraged_kex

deny contains "parameter ssh_discouraged_macs is not set" if not data.gpuhost.params.ssh_discouraged_macs

deny contains "parameter ssh_discouraged_host_key_algorithms is not set" if {
	not data.gpuhost.params.ssh_discouraged_host_key_algorithms
}

deny contains f if {
	some d in lib.daemons
	some field, p in params
	some o in lib.offered(d, field)
	lib.matches(o.name, p[0])
	msg := sprintf("%s offers discouraged %s %s %s", [lib.name(d), p[1], o.name, o.where])
	f := lib.finding(msg, d, replace(field, "_", ""))
}

deny contains msg if {
	some d in lib.daemons
	some o in host_key_algorithms(d)
	lib.matches(o.name, data.gpuhost.params.ssh_discouraged_host_key_algorithms)
	msg := sprintf("%s offers discouraged host key algorithm %s %s", [lib.name(d), o.name, o.where])
}

# Host key algorithms: the wire's list where it was read, else the types of
# the host keys the configuration names.
host_key_algorithms(d) := lib.offered(d, "host_key_algorithms") if {
	count(lib.wire(d)) > 0
} else := {{"name": k.type, "where": sprintf("in host key %s", [k.file])} |
	some k in object.get(d, "host_keys", [])
	k.source == "file"
	k.type != ""
	presented(d, k.type)
}

# presented holds when the configuration lets sshd sign with a key of this
# type: an RSA key signs as rsa-sha2-512, rsa-sha2-256 or ssh-rsa, any other
# key as its own type. Facts without the list present every key.
presented(d, _) if not d.host_key_algorithms

presented(d, "ssh-rsa") if {
	some a in d.host_key_algorithms
	a in {"rsa-sha2-512", "rsa-sha2-256", "ssh-rsa"}
}

presented(d, type) if {
	type != "ssh-rsa"
	type in d.host_key_algorithms
}
