# METADATA
# title: Kernel modules the benchmark disables cannot load
# description: >-
#   Every module params.kernel_modules_disabled names (CIS Ubuntu 22.04 sections 1.1 and 3.4 by default:
#   cramfs, freevxfs, hfs, hfsplus, jffs2, udf, usb-storage, dccp, rds, sctp, tipc) must have an
#   "install MODULE /bin/false" (or /bin/true) line in modprobe.d, the first install line for it in
#   modprobe's order, which OpenSCAP's check asks for too: a blacklist line alone keeps only its
#   aliases from loading it, not "modprobe MODULE". On a live host a module the running kernel has
#   loaded fails as well.
# scope: package
# custom:
#   id: GH-KRN-001
#   severity: medium
#   location: /etc/modprobe.d/cis.conf
#   remediation: >-
#     Add "install MODULE /bin/false" and "blacklist MODULE" for each module to a file such as
#     /etc/modprobe.d/cis.conf, remove any earlier install line for it, and unload a loaded one with
#     "modprobe -r MODULE" (or reboot).
#   controls:
#     cis-ubuntu-22.04: ["1.1.1.1", "1.1.1.2", "1.1.1.3", "1.1.1.4", "1.1.1.5", "1.1.1.6", "1.1.24", "3.4.1", "3.4.2", "3.4.3", "3.4.4"]
#     nist-800-53: [CM-6, CM-7, MP-7]
#   targets: [rootfs, image, host, facts]
#   requires: [kernel_modules]
package gpuhost.kernel.modules

import data.gpuhost.lib.locate

wanted := object.get(data.gpuhost.params, "kernel_modules_disabled", [])

skip contains "params.kernel_modules_disabled names no module" if count(wanted) == 0

# The commands that keep a module from loading, as OpenSCAP accepts them.
disabling := {"/bin/false", "/bin/true"}

# name(module) is the module's name as modprobe reads it: "-" is "_".
name(module) := replace(module, "-", "_")

disabled(module) if input.kernel_modules.modules[name(module)].install.command in disabling

loaded(module) if name(module) in input.kernel_modules.loaded

deny contains object.union({"msg": msg, "subject": module}, place(module)) if {
	some module in wanted
	not disabled(module)
	msg := sprintf("%s can be loaded: %s%s", [module, configured(module), loaded_text(module)])
}

deny contains object.union({"msg": msg, "subject": module}, place(module)) if {
	some module in wanted
	disabled(module)
	loaded(module)
	msg := sprintf("%s is loaded in the running kernel, though modprobe.d keeps it from loading again; unload it (modprobe -r %s) or reboot", [module, module])
}

# configured(module) says why modprobe.d does not keep the module out.
configured(module) := sprintf("its install line runs %q, not /bin/false or /bin/true", [c.install.command]) if {
	c := input.kernel_modules.modules[name(module)]
	c.install
} else := sprintf(`no modprobe.d file has "install %s /bin/false", and its blacklist line keeps only its aliases from loading it`, [module]) if {
	input.kernel_modules.modules[name(module)].blacklist
} else := sprintf(`no modprobe.d file has "install %s /bin/false"`, [module])

loaded_text(module) := "; the running kernel has it loaded" if {
	loaded(module)
} else := ""

# place(module) is the line a fix edits: the module's install line, else
# its blacklist line, which the install line goes beside.
place(module) := locate.place(c.install.file, c.install.line) if {
	c := input.kernel_modules.modules[name(module)]
	c.install
} else := locate.place(b.file, b.line) if {
	b := input.kernel_modules.modules[name(module)].blacklist
} else := {}
