# METADATA
# title: The kernel runs in lockdown
# description: >-
#   Lockdown keeps root from changing the running kernel (loading unsigned modules, writing
#   /dev/mem, kexec of an unsigned kernel, hibernation to an unverified image), which is what
#   makes Secure Boot's chain reach past the kernel. gpuhost reads /sys/kernel/security/lockdown
#   on a running host; the mode in brackets must be integrity or confidentiality. none fails;
#   securityfs not mounted, or a file that names no mode, is an error. A kernel with no lockdown
#   LSM locks nothing down and fails. A host that does not boot through shim is not meant for
#   Secure Boot, and the check skips it unless params.secure_boot_required is true.
# scope: package
# custom:
#   id: GH-SB-005
#   severity: medium
#   location: /etc/default/grub
#   remediation: >-
#     Boot with Secure Boot on (Debian and Ubuntu kernels then lock down in integrity mode), or add
#     lockdown=integrity to the kernel command line (GRUB_CMDLINE_LINUX in /etc/default/grub) and
#     run update-grub.
#   controls:
#     nist-800-53: [SI-7, CM-7, AC-6]
#   targets: [host, facts]
#   requires: [secureboot]
package gpuhost.sb.lockdown

import data.gpuhost.sb.lib

ld := object.get(lib.sb, "lockdown", null)

skip contains lib.advisory

skip contains "the facts hold no lockdown mode: it is read only on a running host" if ld == null

error contains lib.unknown

error contains msg if {
	ld != null
	object.get(ld, "error", "") != ""
	msg := sprintf("the lockdown mode could not be read: %s", [ld.error])
}

deny contains "the kernel is not locked down (lockdown mode none): root can change the running kernel" if ld.mode == "none"
