# The one file of pinned versions a human reviews before an image release.
# Every template reads it:  packer build -var-file=images/pins.pkrvars.hcl images/<template>.pkr.hcl
#
# A change here changes what every image installs; the provisioner installs
# each as `package=version`, holds it, and fails the build if apt ends up with
# anything else. Versions are exact Debian package versions as `apt-cache
# policy` prints them for the repository named beside each.

# NVIDIA driver by branch, from NVIDIA's CUDA repository (driver source
# "cuda-repo"). Branch-suffixed meta packages exist up to 580; from 590 on the
# templates would use nvidia-open / cuda-drivers and nvidia-driver-pinning.
# REVIEW: confirm each against the repository's Packages index for the
# target release before a release build.
driver_versions = {
  "535" = "535.261.03-0ubuntu1"
  "550" = "550.163.01-0ubuntu1"
  "580" = "580.95.05-0ubuntu1"
}

# CUDA toolkit (cuda-toolkit-12-8 at this exact version).
cuda_version = "12.8.1-1"

# NVIDIA container toolkit: all four packages (nvidia-container-toolkit,
# nvidia-container-toolkit-base, libnvidia-container-tools,
# libnvidia-container1) are pinned and held at this one version.
container_toolkit_version = "1.17.8-1"

# Trust anchors. The plan downloads each and refuses it unless its sha256 is
# this value, before installing anything from it. The all-zero values are
# placeholders that make every Ubuntu build fail at that check, printing the
# digest it found: review the file, then put its digest here.
cuda_keyring_sha256          = "0000000000000000000000000000000000000000000000000000000000000000" # cuda-keyring_1.1-1_all.deb (key 3bf863cc)
container_toolkit_key_sha256 = "0000000000000000000000000000000000000000000000000000000000000000" # libnvidia-container gpgkey, ASCII-armored

# The NGC base the Ubuntu templates pre-seed (their ngc_base), by the digest
# its tag named when the image was reviewed. The gpuhost-ngc data source
# fails the build when the tag resolves to anything else, naming both
# digests. Like the trust anchors above, the all-zero value fails the first
# build that way: review the image it names, then put that digest here.
ngc_base_digest = "sha256:0000000000000000000000000000000000000000000000000000000000000000" # nvcr.io/nvidia/cuda:12.8.1-base-ubuntu22.04

# The Debian 12 stand-in: NVIDIA 535 userspace from Debian non-free.
debian_driver_version       = "535.261.03-1"
debian_persistenced_version = "535.171.04-1~deb12u1"

# The kernel the Debian 12 disk boots (linux-image-<release>), installed at
# this version and held with the NVIDIA stack. The image is bootstrapped from
# the suite alone, so this is the kernel of the bookworm point release, not
# a newer one from bookworm-security.
debian_kernel         = "6.1.0-50-amd64"
debian_kernel_version = "6.1.176-1"
