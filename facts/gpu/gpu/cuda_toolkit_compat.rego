# METADATA
# title: The installed CUDA toolkit needs no newer driver than the one installed
# description: >-
#   Each driver branch supports CUDA up to a version (535 supports 12.2, 550 supports 12.4, 580
#   supports 13.0; the matrix is in facts/gpu/compat.go and reaches policy as gpu_driver.max_cuda).
#   A toolkit newer than that builds programs the driver refuses to run ("CUDA driver version is
#   insufficient"). Minor-version compatibility lets some such programs run with reduced features;
#   this check holds the image to the strict rule. Skips when no toolkit or no driver is installed,
#   or the branch is not in the matrix.
# scope: package
# custom:
#   id: GH-GPU-017
#   severity: high
#   location: /var/lib/dpkg/status
#   remediation: >-
#     Install a driver branch that supports the toolkit (see NVIDIA's CUDA release notes, table 3),
#     or pin the toolkit to the newest version the driver branch supports.
#   controls:
#     nist-800-53: [CM-2, SA-22]
#   targets: [rootfs, image, host, facts]
#   requires: [gpu_driver]
package gpuhost.gpu.cuda_toolkit_compat

toolkit := object.get(input.gpu_driver, "cuda_toolkit_version", "")

max_cuda := object.get(input.gpu_driver, "max_cuda", "")

branch := object.get(input.gpu_driver, "branch", 0)

skip contains "no CUDA toolkit is installed" if toolkit == ""

skip contains "no NVIDIA driver package is installed" if branch == 0

skip contains sprintf("driver branch %d is not in the compatibility matrix", [branch]) if {
	branch != 0
	max_cuda == ""
}

deny contains msg if {
	toolkit != ""
	max_cuda != ""
	semver.compare(sprintf("%s.0", [toolkit]), sprintf("%s.0", [max_cuda])) > 0
	msg := sprintf(
		"CUDA toolkit %s (%s) needs a newer driver: branch %d supports CUDA up to %s",
		[toolkit, input.gpu_driver.cuda_toolkit_source, branch, max_cuda],
	)
}
