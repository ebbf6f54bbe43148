# The pinned versions a human reviews before an Ubuntu 24.04 (noble) image
# release; ubuntu-24.04-gpu.pkr.hcl reads it:
#
#   packer build -var-file=images/pins-ubuntu-24.04.pkrvars.hcl images/ubuntu-24.04-gpu.pkr.hcl
#
# A change here changes what the image installs; the provisioner installs
# each as `package=version`, holds it, and fails the build if apt ends up
# with anything else. Versions are exact Debian package versions as
# `apt-cache policy` prints them for the repository named beside each.
#
# Everything NVIDIA-side is chosen by the driver branch (the template's
# driver_branch): the driver, the CUDA release that branch runs, and the
# NGC base built on that release. The three maps must name the same
# branches; images/plans_test.go holds them to that and each pair to the
# driver/CUDA compatibility matrix the gate judges with.
#
# Only branch 580 is offered. NVIDIA's ubuntu2404 CUDA repository, and its
# ubuntu24.04 base images, begin with CUDA 12.5, newer than the matrix lets
# branch 535 (12.2) or 550 (12.4) run; a noble image on those branches would
# need a CUDA the gate refuses.
# REVIEW: confirm against the ubuntu2404 Packages index that no
# cuda-toolkit-12-2 or cuda-toolkit-12-4 has been published since.

# NVIDIA driver by branch, from NVIDIA's CUDA repository (ubuntu2404,
# driver source "cuda-repo").
# REVIEW: confirm against the repository's Packages index for noble before
# a release build.
driver_versions = {
  "580" = "580.95.05-0ubuntu1"
}

# NVIDIA driver by branch, from the Ubuntu archive's restricted component
# (source nvidia-graphics-drivers-BRANCH-server), for driver_source
# "ubuntu-archive": the userspace at this version and Canonical's
# precompiled modules for target_kernel (linux-modules-nvidia-BRANCH-server-
# KERNEL, whose version follows the kernel's ABI, not the driver's).
# REVIEW: confirm each against `apt-cache policy nvidia-utils-BRANCH-server`
# on noble with -updates and -security enabled before a release build.
archive_driver_versions = {
  "580" = "580.95.05-0ubuntu0.24.04.2"
}

# CUDA toolkit by driver branch: cuda-toolkit-13-0 at this exact version.
# The plan pins and holds every component package of that release too
# (cuda-nvcc-13-0, cuda-cudart-13-0, libcublas-13-0, ...), each at the
# build the meta packages name.
# REVIEW: 13.0.1 (cudart 13.0.88-1) is a 13.0 update, and a later 13.0.x
# may be published: confirm against the Packages index.
cuda_versions = {
  "580" = "13.0.1-1"
}

# NVIDIA container toolkit: all four packages (nvidia-container-toolkit,
# nvidia-container-toolkit-base, libnvidia-container-tools,
# libnvidia-container1) are pinned and held at this one version.
container_toolkit_version = "1.17.8-1"

# Trust anchors. The plan downloads each and refuses it unless its sha256 is
# this value, before installing anything from it. The all-zero values are
# placeholders that make every build fail at that check, printing the
# digest it found: review the file, then put its digest here.
cuda_keyring_sha256          = "0000000000000000000000000000000000000000000000000000000000000000" # ubuntu2404 cuda-keyring_1.1-1_all.deb (key 3bf863cc)
container_toolkit_key_sha256 = "0000000000000000000000000000000000000000000000000000000000000000" # libnvidia-container gpgkey, ASCII-armored

# The NGC base the template pre-seeds, by driver branch, and the digest its
# tag named when the image was reviewed. The gpuhost-ngc data source fails
# the build when the tag resolves to anything else, naming both digests.
# Like the trust anchors above, the all-zero digest fails the first build
# that way: review the image it names, then put that digest here.
ngc_bases = {
  "580" = { ref = "nvcr.io/nvidia/cuda:13.0.1-base-ubuntu24.04", digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000" }
}
