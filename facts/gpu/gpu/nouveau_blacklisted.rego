# METADATA
# title: nouveau is blacklisted where the NVIDIA driver is installed
# description: >-
#   If nouveau claims the GPUs first, the NVIDIA kernel module cannot bind to them and NVML finds
#   no GPU. An image with the NVIDIA driver must keep nouveau from loading, with a modprobe.d
#   "blacklist nouveau" or modprobe.blacklist=nouveau on the kernel command line. Skips when no
#   NVIDIA driver package is installed.
# scope: package
# custom:
#   id: GH-GPU-015
#   severity: medium
#   location: /etc/modprobe.d/nvidia-blacklists-nouveau.conf
#   remediation: >-
#     Add /etc/modprobe.d/blacklist-nouveau.conf with "blacklist nouveau" and "options nouveau
#     modeset=0", then rebuild the initramfs (update-initramfs -u) so the blacklist applies at boot.
#   controls:
#     nist-800-53: [CM-7, CM-6]
#   targets: [rootfs, image, host, facts]
#   requires: [gpu_driver]
package gpuhost.gpu.nouveau_blacklisted

skip contains "no NVIDIA driver package is installed" if count(object.get(input.gpu_driver, "packages", [])) == 0

deny contains "the NVIDIA driver is installed but nouveau is not blacklisted (no modprobe.d blacklist, no modprobe.blacklist= on the kernel command line)" if {
	count(input.gpu_driver.packages) > 0
	input.gpu_driver.nouveau_blacklisted == false
}
