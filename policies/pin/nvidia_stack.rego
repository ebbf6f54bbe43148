# METADATA
# title: A GPU image carries the NVIDIA driver, CUDA and the container toolkit
# description: >-
#   A GPU host image is only useful with its whole NVIDIA stack: the driver (its NVML library or
#   kernel module packages), a CUDA toolkit, and the NVIDIA container toolkit that hands GPUs to
#   containers. An image without them would pass every pin and version check by having nothing to
#   pin, so this check fails it instead, naming each missing part. Images that are meant to run
#   without GPUs say so with params.profile set to cpu, and the check skips.
# scope: package
# custom:
#   id: GH-PIN-005
#   severity: high
#   location: /var/lib/dpkg/status
#   remediation: >-
#     Bake the image with the gpuhost-gpu provisioner (driver, cuda and container_toolkit pinned),
#     or set params.profile to cpu for an image that is not a GPU host.
#   controls:
#     nist-800-53: [CM-2, CM-8]
#   targets: [rootfs, image, host, facts]
#   requires: [packages, gpu_driver]
package gpuhost.pin.nvidia_stack

profile := object.get(data.gpuhost.params, "profile", "gpu")

installed contains p.name if some p in object.get(input, "packages", [])

skip contains "params.profile is cpu: this image is not meant to carry the NVIDIA stack" if profile == "cpu"

deny contains "no NVIDIA driver is installed: no NVML library, driver or kernel module package" if {
	profile == "gpu"
	object.get(input.gpu_driver, "version", "") == ""
}

deny contains "no CUDA toolkit is installed: no cuda-toolkit package and no /usr/local/cuda/version.json" if {
	profile == "gpu"
	object.get(input.gpu_driver, "cuda_toolkit_version", "") == ""
}

deny contains "the NVIDIA container toolkit is not installed (nvidia-container-toolkit)" if {
	profile == "gpu"
	not "nvidia-container-toolkit" in installed
}
