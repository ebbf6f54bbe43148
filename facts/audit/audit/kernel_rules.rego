# METADATA
# title: The kernel holds the audit rules the files load
# description: >-
#   The rules files say what should be recorded; the kernel records what it was given. A rules file
#   changed after boot, a rule auditctl refused, rules locked with -e 2 before an edit, or rules
#   loaded by hand all leave the two apart, and only the kernel's copy records anything. On a live
#   host the kernel's rules are read over the audit netlink socket (AUDIT_LIST_RULES) and matched
#   with the files rule by rule. Rules that name a system call by a number this scanner does not
#   know are not matched and are counted in the facts.
# scope: package
# custom:
#   id: GH-AUD-007
#   severity: medium
#   location: /etc/audit/rules.d/audit.rules
#   remediation: >-
#     Run augenrules --load (or auditctl -R /etc/audit/audit.rules) and read its errors; with -e 2 in
#     the rules, reboot to load the changed files.
#   controls:
#     nist-800-53: [AU-2, AU-12, CM-6]
#   targets: [host, facts]
#   requires: [audit]
package gpuhost.audit.kernel_rules

k := input.audit.kernel

error contains "the kernel's audit rules were not read (not a live scan)" if not k

error contains sprintf("the kernel's audit rules could not be read: %s", [k.error]) if {
	k.error != ""
}

deny contains {"msg": msg, "file": r.file, "line": r.line} if {
	some r in k.unloaded
	msg := sprintf("%s:%d is not loaded in the kernel: %s", [r.file, r.line, r.text])
}

deny contains {"msg": sprintf("the kernel holds a rule no rules file has: %s", [r.text]), "subject": r.text} if {
	some r in k.unexpected
}
