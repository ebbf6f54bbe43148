# METADATA
# title: login.defs ages passwords and gives new files a restrictive umask
# description: >-
#   The shadow suite applies /etc/login.defs to every password it sets and every session
#   login starts: a password that never expires, that can be changed back at once, or expires
#   without warning, and a umask that lets others read new files, are what CIS Ubuntu 22.04
#   5.4.1.1 to 5.4.1.3 and 5.4.4 forbid. Each entry of params.login_defs names a keyword and
#   its bounds (min and max for a number of days; umask for a umask whose bits must all be
#   set); a keyword the file does not set fails, since the suite's own default is to never
#   expire.
# scope: package
# custom:
#   id: GH-IAM-007
#   severity: medium
#   location: /etc/login.defs
#   remediation: >-
#     Set the keywords in /etc/login.defs (PASS_MAX_DAYS 365, PASS_MIN_DAYS 1, PASS_WARN_AGE 7,
#     UMASK 027), and apply the ageing to existing accounts with chage.
#   controls:
#     nist-800-53: [IA-5(1)]
#     cis-ubuntu-22.04: ["5.4.1.1", "5.4.1.2", "5.4.1.3", "5.4.4"]
#   targets: [rootfs, image, host, facts]
#   requires: [access]
package gpuhost.iam.login_defs

wanted := object.get(data.gpuhost.params, "login_defs", {})

defs := object.get(input.access, "login_defs", null)

deny contains {"msg": msg, "subject": key, "file": "/etc/login.defs"} if {
	count(wanted) > 0
	defs == null
	some key, _ in wanted
	msg := sprintf("no /etc/login.defs was read (none in the target, or facts from before gpuhost read it): %s is unset", [key])
}

deny contains {"msg": msg, "subject": key, "file": defs.file} if {
	defs != null
	some key, _ in wanted
	not defs.settings[key]
	msg := sprintf("%s sets no %s; want %s", [defs.file, key, describe(wanted[key])])
}

deny contains {"msg": msg, "subject": key, "file": defs.file, "line": line} if {
	defs != null
	some key, rule in wanted
	v := defs.settings[key]
	line := defs.lines[key]
	not allowed(v, rule)
	msg := sprintf("%s sets %s %s; want %s", [defs.file, key, v, describe(rule)])
}

allowed(v, rule) if {
	rule.umask
	bits.and(octal(v), octal(rule.umask)) == octal(rule.umask)
}

allowed(v, rule) if {
	not rule.umask
	n := to_number(v)
	n >= object.get(rule, "min", n)
	n <= object.get(rule, "max", n)
}

# octal(s) is the value of an octal number such as a umask ("027").
octal(s) := sum([bits.lsh(d, 3 * ((count(ds) - 1) - i)) | some i, d in ds]) if {
	ds := [to_number(c) | some c in split(s, "")]
	every d in ds {
		d < 8
	}
}

describe(rule) := sprintf("a umask with the bits of %s", [rule.umask]) if rule.umask

describe(rule) := sprintf("between %v and %v", [rule.min, rule.max]) if {
	not rule.umask
	rule.min
	rule.max
}

describe(rule) := sprintf("at most %v", [rule.max]) if {
	not rule.umask
	not rule.min
	rule.max
}

describe(rule) := sprintf("at least %v", [rule.min]) if {
	not rule.umask
	rule.min
	not rule.max
}
