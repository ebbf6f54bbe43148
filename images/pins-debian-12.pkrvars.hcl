# The pinned versions a human reviews before a build of the Debian 12
# stand-in; debian-12-gpu.pkr.hcl reads it:
#
#   packer build -var-file=images/pins-debian-12.pkrvars.hcl images/debian-12-gpu.pkr.hcl
#
# Versions are exact Debian package versions as `apt-cache policy` prints
# them for bookworm. The provisioner installs each as `package=version`,
# holds it, and fails the build if apt ends up with anything else.
#
# One driver branch, 535: the NVIDIA userspace Debian non-free carries.
# No CUDA pin: Debian's nvidia-cuda-toolkit (11.8, which branch 535 runs)
# is several gigabytes the stand-in does not need to prove the code path;
# waivers-debian-12.yaml says so for the check that wants it.

# NVIDIA 535 userspace from Debian non-free.
debian_driver_version       = "535.261.03-1"
debian_persistenced_version = "535.171.04-1~deb12u1"

# The kernel the Debian 12 disk boots (linux-image-<release>), installed at
# this version and held with the NVIDIA stack. The image is bootstrapped from
# the suite alone, so this is the kernel of the bookworm point release, not
# a newer one from bookworm-security.
debian_kernel         = "6.1.0-50-amd64"
debian_kernel_version = "6.1.176-1"
