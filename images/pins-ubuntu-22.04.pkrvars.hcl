# The pinned versions a human reviews before an Ubuntu 22.04 (jammy) image
# release. Two templates read it: ubuntu-22.04-gpu.pkr.hcl, and
# amazon-ebs-gpu.pkr.hcl, whose source AMI is jammy too, so its NVIDIA
# stack comes from the same ubuntu2204 repositories at the same pins:
#
#   packer build -var-file=images/pins-ubuntu-22.04.pkrvars.hcl images/ubuntu-22.04-gpu.pkr.hcl
#
# A change here changes what those images install; the provisioner installs
# each as `package=version`, holds it, and fails the build if apt ends up
# with anything else. Versions are exact Debian package versions as
# `apt-cache policy` prints them for the repository named beside each.
#
# Everything NVIDIA-side is chosen by the driver branch (the templates'
# driver_branch): the driver, the CUDA release that branch runs, and the
# NGC base built on that release. The three maps must name the same
# branches; images/plans_test.go holds them to that and each pair to the
# driver/CUDA compatibility matrix the gate judges with.

# NVIDIA driver by branch, from NVIDIA's CUDA repository (ubuntu2204,
# driver source "cuda-repo"). Branch-suffixed meta packages exist up to
# 580; from 590 on the plan uses nvidia-open / cuda-drivers and
# nvidia-driver-pinning.
# REVIEW: confirm each against the repository's Packages index for jammy
# before a release build.
driver_versions = {
  "535" = "535.261.03-0ubuntu1"
  "550" = "550.163.01-0ubuntu1"
  "580" = "580.95.05-0ubuntu1"
}

# NVIDIA driver by branch, from the Ubuntu archive's restricted component
# (source nvidia-graphics-drivers-BRANCH-server), for driver_source
# "ubuntu-archive": the userspace at this version and Canonical's
# precompiled modules for target_kernel (linux-modules-nvidia-BRANCH-server-
# KERNEL, whose version follows the kernel's ABI, not the driver's).
# REVIEW: confirm each against `apt-cache policy nvidia-utils-BRANCH-server`
# on jammy with -updates and -security enabled before a release build.
archive_driver_versions = {
  "535" = "535.261.03-0ubuntu0.22.04.2"
  "550" = "550.144.03-0ubuntu0.22.04.2"
  "580" = "580.95.05-0ubuntu0.22.04.2"
}

# CUDA toolkit by driver branch: cuda-toolkit-X-Y at this exact version,
# the newest release of the newest CUDA each branch supports (535: 12.2,
# 550: 12.4, 580: 13.0). The plan pins and holds every component package
# of that release too (cuda-nvcc-X-Y, cuda-cudart-X-Y, libcublas-X-Y, ...),
# each at the build the meta packages name.
# REVIEW: 12.2.2 and 12.4.1 are those minors' last releases (cudart
# 12.2.140-1, 12.4.127-1); 13.0.1 (cudart 13.0.88-1) is a 13.0 update, and
# a later 13.0.x may be published: confirm against the Packages index.
cuda_versions = {
  "535" = "12.2.2-1"
  "550" = "12.4.1-1"
  "580" = "13.0.1-1"
}

# NVIDIA container toolkit: all four packages (nvidia-container-toolkit,
# nvidia-container-toolkit-base, libnvidia-container-tools,
# libnvidia-container1) are pinned and held at this one version, whatever
# the branch.
container_toolkit_version = "1.17.8-1"

# Trust anchors. The plan downloads each and refuses it unless its sha256 is
# this value, before installing anything from it. The all-zero values are
# placeholders that make every build fail at that check, printing the
# digest it found: review the file, then put its digest here.
cuda_keyring_sha256          = "0000000000000000000000000000000000000000000000000000000000000000" # ubuntu2204 cuda-keyring_1.1-1_all.deb (key 3bf863cc)
container_toolkit_key_sha256 = "0000000000000000000000000000000000000000000000000000000000000000" # libnvidia-container gpgkey, ASCII-armored

# The NGC base ubuntu-22.04-gpu.pkr.hcl pre-seeds, by driver branch: NVIDIA's
# CUDA base image of the branch's CUDA release on jammy, and the digest its
# tag named when the image was reviewed. The gpuhost-ngc data source fails
# the build when the tag resolves to anything else, naming both digests.
# Like the trust anchors above, the all-zero digests fail the first build
# that way: review the image it names, then put that digest here.
ngc_bases = {
  "535" = { ref = "nvcr.io/nvidia/cuda:12.2.2-base-ubuntu22.04", digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000" }
  "550" = { ref = "nvcr.io/nvidia/cuda:12.4.1-base-ubuntu22.04", digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000" }
  "580" = { ref = "nvcr.io/nvidia/cuda:13.0.1-base-ubuntu22.04", digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000" }
}
