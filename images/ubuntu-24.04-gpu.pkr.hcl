# Ubuntu 24.04 GPU host image: a pinned NVIDIA stack from NVIDIA's CUDA
# repository on a noble rootfs, hardened by the gpuhost-gpu provisioner's
# hardening block and gated with params-ubuntu-24.04.yaml and
# waivers-ubuntu-24.04.yaml.
#
# The output is a bootable disk laid out as debian-12-gpu.pkr.hcl's: GPT,
# GRUB for UEFI and BIOS, Ubuntu's kernel (kernel_package) with an
# initramfs made by dracut, and a LUKS2 root unlocked at first boot by a
# one-time key made for this build and then by the host's TPM2 (see
# docs/builder-rootfs.mdx). The gpuhost agent and its units are installed
# (scripts/host.sh), so that containerd, sshd, nftables and the
# agent run once it boots; `gpuhost boot --tpm-state DIR` starts it in
# QEMU. The gate reads the encrypted root's files from the rootfs tree kept
# beside the disk:
#
#   gpuhost scan image OUT/disk.qcow2 --rootfs OUT/rootfs \
#     --params images/params-ubuntu-24.04.yaml --waivers images/waivers-ubuntu-24.04.yaml
#
#   packer build -var-file=images/pins-ubuntu-24.04.pkrvars.hcl -var mirror=URL \
#     -var target_kernel=6.8.0-45-generic images/ubuntu-24.04-gpu.pkr.hcl
#
# Build one template file at a time: each declares the variables it reads.

packer {
  required_plugins {
    gpuhost = {
      source  = "github.com/gpuhost/gpuhost"
      version = ">= 0.1.0"
    }
  }
}

variable "driver_branch" {
  type        = string
  default     = "580"
  description = "NVIDIA driver branch: 580, the one branch pins-ubuntu-24.04.pkrvars.hcl pins (NVIDIA's ubuntu2404 repository has no CUDA that 535 or 550 runs). It selects the driver, the CUDA release and the NGC base, so a branch always gets the CUDA it runs."
  validation {
    condition     = contains(["580"], var.driver_branch)
    error_message = "The driver_branch must be 580 on Ubuntu 24.04: NVIDIA's ubuntu2404 repository begins at CUDA 12.5, newer than branch 535 or 550 runs (see pins-ubuntu-24.04.pkrvars.hcl)."
  }
}

variable "driver_flavor" {
  type        = string
  default     = "open"
  description = "open (required for Blackwell, recommended from Turing on) or proprietary."
}

variable "driver_versions" {
  type        = map(string)
  description = "Driver package version by branch in NVIDIA's CUDA repository (driver_source cuda-repo); from pins-ubuntu-24.04.pkrvars.hcl."
}

variable "driver_source" {
  type        = string
  default     = "cuda-repo"
  description = "Where the driver comes from: cuda-repo (NVIDIA's CUDA repository; DKMS builds the modules for target_kernel, signed with the dkms_signing_* files when given) or ubuntu-archive (the archive's restricted component: nvidia-headless-no-dkms-BRANCH-server and Canonical's precompiled, signed linux-modules-nvidia-BRANCH-server for target_kernel; no DKMS, so leave the dkms_signing_* files empty). The CUDA toolkit comes from NVIDIA's repository either way."
  validation {
    condition     = contains(["cuda-repo", "ubuntu-archive"], var.driver_source)
    error_message = "The driver_source must be cuda-repo or ubuntu-archive."
  }
}

variable "archive_driver_versions" {
  type        = map(string)
  description = "Driver package version by branch in the Ubuntu archive (source nvidia-graphics-drivers-BRANCH-server), for driver_source ubuntu-archive; from pins-ubuntu-24.04.pkrvars.hcl."
}

variable "cuda_versions" {
  type        = map(string)
  description = "cuda-toolkit-X-Y package version by driver branch, each the newest CUDA its branch runs; from pins-ubuntu-24.04.pkrvars.hcl. The plan pins and holds the release's component packages with it."
}

variable "container_toolkit_version" {
  type = string
}

variable "cuda_keyring_sha256" {
  type = string
}

variable "container_toolkit_key_sha256" {
  type = string
}

variable "mirror" {
  type        = string
  default     = ""
  description = "Ubuntu archive URL. Empty: the builder uses the build machine's apt sources for noble."
}

variable "snapshot" {
  type        = string
  default     = ""
  description = "Ubuntu snapshot timestamp (YYYYMMDDTHHMMSSZ) for a repeatable build; exclusive with mirror."
}

variable "keyring" {
  type        = string
  default     = "/usr/share/keyrings/ubuntu-archive-keyring.gpg"
  description = "Keyring that verifies the Ubuntu archive on the build machine."
}

variable "target_kernel" {
  type        = string
  default     = ""
  description = "Kernel release the image boots (DKMS builds for it). Empty: the only one under the rootfs's /lib/modules."
}

variable "kernel_package" {
  type        = string
  default     = "linux-image-generic"
  description = "Kernel package the disk boots, installed during the bootstrap with its initramfs; DKMS builds for it and the hold keeps it."
}

variable "agent_bin" {
  type        = string
  default     = "../bin/gpuhost-agent"
  description = "The lean gpuhost build (make build writes bin/gpuhost-agent), installed as /usr/local/bin/gpuhost-agent; relative paths are from the template's directory."
}

variable "cuda_repositories" {
  type        = string
  default     = ""
  description = "The directory of NVIDIA's CUDA repositories to install from, a mirror laid out as NVIDIA's (it holds ubuntu2404/x86_64/). Empty: NVIDIA's own."
}

variable "container_toolkit_repository" {
  type        = string
  default     = ""
  description = "The libnvidia-container repository (a mirror of its stable/deb directory). Empty: NVIDIA's own."
}

variable "container_toolkit_key" {
  type        = string
  default     = ""
  description = "The URL of the container toolkit repository's ASCII-armored key, checked against container_toolkit_key_sha256. Empty: NVIDIA's own."
}

variable "dkms_signing_key" {
  type        = string
  default     = ""
  description = "PEM private key DKMS signs the NVIDIA module with, with dkms_signing_certificate; it never enters the image. Empty: DKMS makes a key per build, so the module differs from build to build."
}

variable "dkms_signing_certificate" {
  type        = string
  default     = ""
  description = "The certificate of dkms_signing_key; the image keeps it at /var/lib/dkms/mok.pub for Secure Boot enrolment."
}

variable "lock_file" {
  type        = string
  default     = ""
  description = "A lock file (gpuhost lock --from MANIFEST writes ubuntu-24.04-gpu.lock) the bake must match exactly: the bootstrap and every package the provisioner installs, with their .deb hashes. Empty: no lock."
}

variable "apt_cache_dir" {
  type        = string
  default     = ""
  description = "Keep downloaded packages here across builds; the bootstrap is cached beside it."
}

variable "output_dir" {
  type    = string
  default = "output/ubuntu-24.04-gpu"
}

variable "image_size" {
  type        = string
  default     = "2G"
  description = "Size of the disk; the root grows at first boot to fill a larger one. The image's part of the encrypted root is re-encrypted at first boot with a key of the host's own, which takes as long as rewriting it: keep the image no larger than its content needs."
}

variable "disk_id_seed" {
  type        = string
  default     = ""
  description = "Derive the disk's partition and file system identifiers from this string instead of drawing them at random, so that a second bake from the same lock makes the same tree (fstab, crypttab, the initramfs). Give each image its own seed, such as its release name."
}

variable "plugin_version" {
  type    = string
  default = "0.1.0"
}

variable "ngc_bases" {
  type = map(object({
    ref    = string
    digest = string
  }))
  description = "NGC base image pre-seeded into the image, by driver branch: NVIDIA's CUDA base of the branch's CUDA release and its reviewed digest (pins-ubuntu-24.04.pkrvars.hcl). The gpuhost-ngc data source fails the build, naming both digests, when the tag no longer resolves to it; the manifest records it."
}

variable "ngc_registry" {
  type        = string
  default     = ""
  description = "A registry (host[:port]) to resolve the NGC base from instead of nvcr.io, such as a mirror; the manifest keeps the nvcr.io name. Empty asks nvcr.io."
}

variable "publish_repository" {
  type        = string
  default     = ""
  description = "OCI repository a passing image is pushed to with its report, manifest and SBOM; empty pushes nothing."
}

variable "signing_key_file" {
  type        = string
  default     = ""
  description = "PEM private key (ECDSA P-256, or cosign's encrypted format with COSIGN_PASSWORD set) that signs a published image and its SLSA provenance; required with publish_repository. Verify with cosign verify --key or gpuhost verify --key and the public key."
}

variable "params" {
  type        = string
  default     = ""
  description = "Policy params the gate judges the image with and the booted host's agent uses (/etc/gpuhost/params.yaml). Empty: params-ubuntu-24.04.yaml beside the template, which pins the default driver branch; a build of another branch passes its own."
}

variable "trivy_db" {
  type        = string
  description = "Offline trivy DB directory (trivy.db, metadata.json) the gate matches the image's packages against; make demo and the end-to-end test write one from images/trivy-db-demo.yaml, a release pipeline passes trivy's own (trivy --download-db-only). Required: the gate refuses an image whose critical checks did not run."
}

locals {
  params    = var.params != "" ? var.params : "${path.root}/params-ubuntu-24.04.yaml"
  agent_bin = abspath(var.agent_bin) == var.agent_bin ? var.agent_bin : "${path.root}/${var.agent_bin}"
}

# Resolves the base's tag (NGC_API_KEY from the environment, never logged)
# and holds it to the reviewed pin: a tag that has moved since the review
# fails the build. The provisioner pulls exactly the pinned digest and
# verifies every blob.
data "gpuhost-ngc" "base" {
  ref      = var.ngc_bases[var.driver_branch].ref
  pinned   = var.ngc_bases[var.driver_branch].digest
  registry = var.ngc_registry
}

source "gpuhost-rootfs" "ubuntu_2404" {
  suite        = "noble"
  distribution = "ubuntu"
  variant      = "minbase"
  components   = ["main", "restricted", "universe"]
  keyring      = var.keyring
  mirror       = var.mirror
  snapshot     = var.snapshot
  # systemd-sysv gives /sbin/init, udev the device links fstab, crypttab
  # and the selftest disk are found by. Since 24.04 systemd-cryptsetup,
  # which opens the root in the initramfs, is a package of its own. DKMS
  # and the headers it builds against only where it builds the module:
  # Canonical's modules come built.
  extra_packages = concat(["systemd", "systemd-sysv", "systemd-cryptsetup", "udev", "ca-certificates"], var.driver_source == "cuda-repo" ? ["linux-headers-generic", "dkms"] : [])
  apt_cache_dir  = var.apt_cache_dir
  lock_file      = var.lock_file
  # Beside the apt cache, not in it: that one is mounted into the build.
  bootstrap_cache_dir = var.apt_cache_dir != "" ? "${var.apt_cache_dir}-bootstrap" : ""
  output_format       = "disk"
  disk_format         = "qcow2"
  # zstd clusters: written several times faster than zlib, to about the same
  # size; QEMU and qemu-img read them from 5.1 (2020) on.
  qcow2_compression = "zstd"
  # LUKS2 root; first boot seals its key to the TPM2's PCR 7. The ESP
  # holds GRUB's own unsigned image: no secure_boot, whose signed chain
  # the builder lays out as Debian's shim and shim-helpers packages ship it.
  encryption {
    luks2 = true
  }
  kernel_package = var.kernel_package
  output_dir     = var.output_dir
  image_size     = var.image_size
  disk_id_seed   = var.disk_id_seed
}

build {
  name    = "ubuntu-24.04-gpu"
  sources = ["source.gpuhost-rootfs.ubuntu_2404"]

  # The agent and what the booted host needs around it, as
  # debian-12-gpu.pkr.hcl installs them: the units and scripts are the ones
  # make install puts on any node (deploy/).
  provisioner "file" {
    sources = [
      local.agent_bin,
      "${path.root}/../deploy/systemd/gpuhost-agent.service",
      "${path.root}/../deploy/systemd/gpuhost-agent.timer",
      "${path.root}/../deploy/systemd/gpuhost-agentd.service",
      "${path.root}/../deploy/systemd/gpuhost-agent-credentials.service",
      "${path.root}/../deploy/systemd/gpuhost-selftest.service",
      "${path.root}/../deploy/systemd/gpuhost-selftest-modules.service",
      "${path.root}/../deploy/scripts/gpuhost-selftest",
      "${path.root}/../deploy/scripts/gpuhost-selftest-modules",
      "${path.root}/../deploy/scripts/gpuhost-agent-credentials",
      "${path.root}/../deploy/udev/90-gpuhost-selftest.rules",
      "${path.root}/files/gpuhost-agentd-image.conf",
      "${path.root}/files/80-gpuhost-dhcp.network",
      "${path.root}/waivers-ubuntu-24.04.yaml",
    ]
    destination = "/tmp/gpuhost-host/"
  }

  provisioner "file" {
    source      = local.params
    destination = "/tmp/gpuhost-host/params.yaml"
  }

  provisioner "shell" {
    environment_vars = ["GPUHOST_TEMPLATE=ubuntu-24.04-gpu"]
    script           = "${path.root}/scripts/host.sh"
  }

  provisioner "gpuhost-gpu" {
    driver {
      version = var.driver_source == "ubuntu-archive" ? var.archive_driver_versions[var.driver_branch] : var.driver_versions[var.driver_branch]
      branch  = var.driver_branch
      flavor  = var.driver_flavor
      source  = var.driver_source
    }
    # The CUDA release the driver branch runs, from the same pins file, so
    # a branch cannot be paired with a CUDA it does not support.
    cuda {
      version = var.cuda_versions[var.driver_branch]
    }
    container_toolkit {
      version = var.container_toolkit_version
    }
    containerd {
      systemd_cgroup  = true
      default_runtime = "nvidia"
      cdi             = true
    }
    hold {
      kernel = true
    }
    keyring_sha256 {
      cuda_keyring          = var.cuda_keyring_sha256
      container_toolkit_key = var.container_toolkit_key_sha256
    }
    repositories {
      cuda                  = var.cuda_repositories
      container_toolkit     = var.container_toolkit_repository
      container_toolkit_key = var.container_toolkit_key
    }
    dkms {
      signing_key         = var.dkms_signing_key
      signing_certificate = var.dkms_signing_certificate
    }
    distro {
      id         = "ubuntu"
      version_id = "24.04"
      codename   = "noble"
    }
    target_kernel               = var.target_kernel
    lock_file                   = var.lock_file
    fabric_manager              = false
    persistenced                = true
    cgroup_v2                   = true
    disable_unattended_upgrades = true
    # The host's hardening, after the GPU stack and before the manifest:
    # the OpenSSL default, sshd, nftables (ssh and the agent's /metrics
    # open, as params allows), auditd, sudo and the role groups, journald,
    # and the CIS baseline (login.defs, kernel modules and parameters, core
    # dumps, file modes) at the default params' values.
    # The name is the waivers' target.
    hardening {
      hostname = "ubuntu-2404-gpu"
      firewall {
        allowed_tcp_ports = [22, 9108]
      }
    }
    # From the same registry the data source asked: a mirror of nvcr.io
    # serves the pinned digest, and the image keeps the nvcr.io name.
    ngc_registry = var.ngc_registry
    ngc_images {
      ref    = data.gpuhost-ngc.base.ref
      digest = data.gpuhost-ngc.base.digest
    }
    manifest {
      template       = "ubuntu-24.04-gpu"
      mirror         = var.mirror
      snapshot       = var.snapshot
      plugin_version = var.plugin_version
    }
  }

  # Nothing is published unless the image passes the pack at fail_on.
  post-processor "gpuhost-gate" {
    params       = local.params
    waivers      = "${path.root}/waivers-ubuntu-24.04.yaml"
    fail_on      = "high"
    fail_on_skip = "critical"
    compliance   = "gpu-container-host"
    trivy_db     = var.trivy_db
    publish {
      repository    = var.publish_repository
      template_file = "${path.root}/ubuntu-24.04-gpu.pkr.hcl"
      signing {
        key_file     = var.signing_key_file
        password_env = "COSIGN_PASSWORD"
      }
    }
  }
}
