# METADATA
# title: Only root has uid 0, and no account has an empty password
# description: >-
#   A second account with uid 0 is root under another name, outside every rule written for root;
#   an account with an empty password lets anyone log in as it wherever passwords are accepted
#   (a console, su, a PAM service that allows nullok). Read from /etc/passwd and /etc/shadow; the
#   hashes themselves are never collected.
# scope: package
# custom:
#   id: GH-IAM-001
#   severity: critical
#   location: /etc/shadow
#   remediation: >-
#     Remove or renumber the extra uid 0 accounts (usermod -u); lock accounts without a password
#     (passwd -l NAME) or set one.
#   controls:
#     nist-800-53: [AC-2, IA-5, AC-6]
#     cis: ["7.2.2", "7.2.9"]
#   targets: [rootfs, image, host, facts]
#   requires: [access]
package gpuhost.iam.accounts

deny contains {"msg": sprintf("account %s has uid 0: it is root under another name", [u.name]), "subject": u.name} if {
	some u in input.access.users
	u.uid == 0
	u.name != "root"
}

deny contains {"msg": sprintf("account %s has an empty password: anyone may log in as it where passwords are accepted", [u.name]), "subject": u.name} if {
	some u in input.access.users
	u.password == "empty"
}
