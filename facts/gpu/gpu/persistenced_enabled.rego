# METADATA
# title: nvidia-persistenced is enabled where the NVIDIA driver is installed
# description: >-
#   nvidia-persistenced keeps the GPUs initialised between jobs (persistence mode, GH-GPU-008) from
#   boot on. An image with the driver must enable it. Skips when no NVIDIA driver package is installed.
# scope: package
# custom:
#   id: GH-GPU-016
#   severity: medium
#   location: /etc/systemd/system/multi-user.target.wants/nvidia-persistenced.service
#   remediation: >-
#     Install nvidia-persistenced and run "systemctl enable nvidia-persistenced.service" in the image.
#   controls:
#     nist-800-53: [CM-6]
#   targets: [rootfs, image, host, facts]
#   requires: [gpu_driver]
package gpuhost.gpu.persistenced_enabled

skip contains "no NVIDIA driver package is installed" if count(object.get(input.gpu_driver, "packages", [])) == 0

deny contains "the NVIDIA driver is installed but nvidia-persistenced.service is not enabled" if {
	count(input.gpu_driver.packages) > 0
	input.gpu_driver.persistenced_enabled == false
}
