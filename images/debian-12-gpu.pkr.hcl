# Debian 12 GPU image: the runnable stand-in for the Ubuntu templates on
# machines that reach only Debian's archive. Same builder, same provisioner
# code path, with the real NVIDIA 535 userspace (libnvidia-ml1, nvidia-smi,
# nvidia-persistenced) from Debian non-free. Debian has no container toolkit
# package, so none is installed; containerd still gets SystemdCgroup.
#
# The output is a bootable disk (GPT; for UEFI, Debian's signed shim, GRUB
# and kernel, which boot with Secure Boot enforced; GRUB for BIOS; Debian's
# own kernel pinned in pins-debian-12.pkrvars.hcl) whose root is LUKS2, unlocked at first
# boot by a one-time key made for this build and then by the host's TPM2
# (see docs/builder-rootfs.mdx): containerd, sshd, nftables and the
# gpuhost agent run once it boots, and `gpuhost boot --tpm-state DIR`
# starts it in QEMU.
#
# Hardened for the gpuhost gate by the gpuhost-gpu provisioner's hardening
# block: nftables drops inbound traffic except ssh and the agent's /metrics,
# OpenSSL's system default refuses protocols below TLS 1.3, sshd takes keys
# only with strong algorithms (and a one-time code from admins), auditd
# records root's and users' commands, only admins may sudo, the journal is
# kept; nouveau is blacklisted. What Debian cannot give this image (the NVIDIA container
# runtime, CUDA 12) is waived in waivers-debian-12.yaml, with why. The
# encrypted root's files are read from the rootfs tree the builder keeps
# beside the disk, its encryption from the disk:
#
#   gpuhost scan image OUT/disk.qcow2 --rootfs OUT/rootfs \
#     --params images/params-debian-12.yaml --waivers images/waivers-debian-12.yaml
#
#   packer build -var-file=images/pins-debian-12.pkrvars.hcl images/debian-12-gpu.pkr.hcl
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

variable "debian_driver_version" {
  type        = string
  description = "Version of libnvidia-ml1 and nvidia-smi; from pins-debian-12.pkrvars.hcl."
}

variable "debian_persistenced_version" {
  type        = string
  description = "Version of nvidia-persistenced; from pins-debian-12.pkrvars.hcl."
}

variable "debian_kernel" {
  type        = string
  description = "Kernel release the image boots (linux-image-<release>), installed and held; from pins-debian-12.pkrvars.hcl."
}

variable "debian_kernel_version" {
  type        = string
  description = "Package version of linux-image-<debian_kernel>; from pins-debian-12.pkrvars.hcl."
}

variable "agent_bin" {
  type        = string
  default     = "../bin/gpuhost-agent"
  description = "The lean gpuhost build (make build writes bin/gpuhost-agent), installed as /usr/local/bin/gpuhost-agent; relative paths are from the template's directory."
}

variable "params" {
  type        = string
  default     = ""
  description = "Policy params the gate judges the image with and the booted host's agent uses (/etc/gpuhost/params.yaml). Empty: params-debian-12.yaml beside the template."
}

variable "mirror" {
  type        = string
  default     = ""
  description = "Debian archive URL. Empty: the builder uses the build machine's apt sources."
}

variable "snapshot" {
  type        = string
  default     = ""
  description = "Debian snapshot timestamp (YYYYMMDDTHHMMSSZ) for a repeatable build; exclusive with mirror."
}

variable "lock_file" {
  type        = string
  default     = ""
  description = "A lock file (gpuhost lock --from MANIFEST writes debian-12-gpu.lock) the bake must match exactly: the bootstrap and every package the provisioner installs, with their .deb hashes. Empty: no lock."
}

variable "apt_cache_dir" {
  type        = string
  default     = ""
  description = "Keep downloaded packages here across builds."
}

variable "output_dir" {
  type    = string
  default = "output/debian-12-gpu"
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

variable "ngc_images" {
  type = list(object({
    ref    = string
    digest = string
  }))
  default     = []
  description = "Container bases to pre-seed into /var/lib/gpuhost/images, each pinned by digest (make demo passes one)."
}

variable "ngc_allowed_registries" {
  type        = list(string)
  default     = ["nvcr.io"]
  description = "Registries ngc_images may come from."
}

variable "publish_repository" {
  type        = string
  default     = ""
  description = "OCI repository (registry/repository, no tag) a passing image is pushed to with its evidence; empty pushes nothing."
}

variable "signing_key_file" {
  type        = string
  default     = ""
  description = "PEM private key (ECDSA P-256, or cosign's encrypted format with COSIGN_PASSWORD set) that signs a published image and its SLSA provenance; required with publish_repository. Verify with cosign verify --key or gpuhost verify --key and the public key."
}

variable "dkms_signing_key" {
  type        = string
  default     = ""
  description = "PEM RSA key out-of-tree modules for this image's hosts are signed with, as DKMS signs them (dkms.signing_key of gpuhost-gpu); set with dkms_signing_certificate. Used during the build only: the image keeps the certificate alone, at /var/lib/dkms/mok.pub. Empty: none."
}

variable "dkms_signing_certificate" {
  type        = string
  default     = ""
  description = "The X.509 certificate of dkms_signing_key, PEM or DER: the Machine Owner Key the image's hosts enrol (mokutil --import /var/lib/dkms/mok.pub, see docs/baking.md, Secure Boot) so that Secure Boot's lockdown lets the modules it signed load."
}

variable "trivy_db" {
  type        = string
  description = "Offline trivy DB directory (trivy.db, metadata.json) the gate matches the image's packages against; make demo and the end-to-end test write one from images/trivy-db-demo.yaml, a release pipeline passes trivy's own (trivy --download-db-only). Required: the gate refuses an image whose critical checks did not run."
}

locals {
  params    = var.params != "" ? var.params : "${path.root}/params-debian-12.yaml"
  agent_bin = abspath(var.agent_bin) == var.agent_bin ? var.agent_bin : "${path.root}/${var.agent_bin}"
}

source "gpuhost-rootfs" "debian_12" {
  suite        = "bookworm"
  distribution = "debian"
  variant      = "minbase"
  components   = ["main", "contrib", "non-free", "non-free-firmware"]
  mirror       = var.mirror
  snapshot     = var.snapshot
  # What the host runs comes with the bootstrap, not a provisioner's
  # apt-get: the gpuhost-gpu manifest then lists it as baked, and no second
  # apt-get update runs. systemd-sysv gives /sbin/init, udev the device
  # links fstab and the selftest disk are found by; the provisioner's
  # hardening configures nftables, sshd, sudo, sshd's second factor and
  # auditd.
  extra_packages = [
    "systemd", "systemd-sysv", "udev", "ca-certificates", "nftables", "openssh-server",
    "sudo", "libpam-google-authenticator", "auditd",
  ]
  apt_cache_dir = var.apt_cache_dir
  lock_file     = var.lock_file
  # Beside the apt cache, not in it: that one is mounted into the build.
  bootstrap_cache_dir = var.apt_cache_dir != "" ? "${var.apt_cache_dir}-bootstrap" : ""
  output_format       = "disk"
  disk_format         = "qcow2"
  # zstd clusters: written several times faster than zlib, to about the same
  # size; QEMU and qemu-img read them from 5.1 (2020) on.
  qcow2_compression = "zstd"
  # UEFI boots through Debian's signed chain, shim (Microsoft's UEFI CA) ->
  # GRUB -> the kernel (Debian's key), so that the host boots with Secure
  # Boot enforced; BIOS boots GRUB as before.
  secure_boot = true
  # LUKS2 root; first boot seals its key to the TPM2's PCR 7.
  encryption {
    luks2 = true
  }
  kernel_package = "linux-image-${var.debian_kernel}=${var.debian_kernel_version}"
  output_dir     = var.output_dir
  image_size     = var.image_size
  disk_id_seed   = var.disk_id_seed
}

build {
  name    = "debian-12-gpu"
  sources = ["source.gpuhost-rootfs.debian_12"]

  # The agent and what the booted host needs around it; the units and
  # scripts are the ones make install puts on any node (deploy/).
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
      "${path.root}/waivers-debian-12.yaml",
    ]
    destination = "/tmp/gpuhost-host/"
  }

  provisioner "file" {
    source      = local.params
    destination = "/tmp/gpuhost-host/params.yaml"
  }

  provisioner "shell" {
    environment_vars = ["GPUHOST_TEMPLATE=debian-12-gpu"]
    script           = "${path.root}/scripts/host.sh"
  }

  provisioner "gpuhost-gpu" {
    driver {
      version              = var.debian_driver_version
      persistenced_version = var.debian_persistenced_version
      source               = "debian"
    }
    containerd {
      systemd_cgroup  = true
      default_runtime = "runc"
    }
    distro {
      id         = "debian"
      version_id = "12"
      codename   = "bookworm"
    }
    # The image's own kernel is held like the driver; the debian source
    # installs userspace only, so no DKMS builds against it. The signing
    # key's certificate stays for the hosts to enrol as their MOK: the
    # modules built for them later are signed with it.
    target_kernel = var.debian_kernel
    dkms {
      signing_key         = var.dkms_signing_key
      signing_certificate = var.dkms_signing_certificate
    }
    lock_file = var.lock_file
    hold {
      kernel = true
    }
    persistenced                = true
    cgroup_v2                   = true
    disable_unattended_upgrades = true
    # Logins share at most half the memory, and are reclaimed from at 40%,
    # so a user session cannot starve the workloads (GH-CGR-004); a
    # kubelet that joins gets its reservations from the fragment.
    memory_limits {
      slice_max  = { "user.slice" = "50%" }
      slice_high = { "user.slice" = "40%" }
      kubelet {
        system_reserved = "2Gi"
        kube_reserved   = "1Gi"
        eviction_hard   = "500Mi"
      }
    }
    ngc_allowed_registries = var.ngc_allowed_registries
    dynamic "ngc_images" {
      for_each = var.ngc_images
      content {
        ref    = ngc_images.value.ref
        digest = ngc_images.value.digest
      }
    }
    # The host's hardening, in the plan after the GPU stack and before the
    # manifest, whose config_files digests are then of the hardened files.
    # The firewall opens ssh and the agent's /metrics (params-debian-12.yaml
    # allows both); the name is the waivers' target.
    hardening {
      hostname = "debian-12-gpu"
      firewall {
        allowed_tcp_ports = [22, 9108]
      }
    }
    manifest {
      template       = "debian-12-gpu"
      mirror         = var.mirror
      snapshot       = var.snapshot
      plugin_version = var.plugin_version
    }
  }

  # The gate scans the disk with the same pipeline as `gpuhost scan image`,
  # writes its reports beside it and fails the build at fail_on. Only a
  # passing image is pushed, with its report, manifest and SBOM attached as
  # OCI referrers. The waivers cover what Debian 12 cannot provide.
  post-processor "gpuhost-gate" {
    params  = local.params
    waivers = "${path.root}/waivers-debian-12.yaml"
    fail_on = "high"
    # A critical check that did not run fails the build too: without a
    # vulnerability DB, GH-SC-001 would be skipped and the image pass.
    fail_on_skip = "critical"
    trivy_db     = var.trivy_db
    publish {
      repository    = var.publish_repository
      template_file = "${path.root}/debian-12-gpu.pkr.hcl"
      signing {
        key_file     = var.signing_key_file
        password_env = "COSIGN_PASSWORD"
      }
      tag = "debian-12-gpu-${formatdate("YYYYMMDD'T'hhmmss'Z'", timestamp())}"
    }
  }
}
