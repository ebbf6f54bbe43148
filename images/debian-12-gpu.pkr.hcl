# Debian 12 GPU image: the runnable stand-in for the Ubuntu templates on
# machines that reach only Debian's archive. Same builder, same provisioner
# code path, with the real NVIDIA 535 userspace (libnvidia-ml1, nvidia-smi,
# nvidia-persistenced) from Debian non-free. Debian has no container toolkit
# package, so none is installed; containerd still gets SystemdCgroup.
#
# Hardened for the gpuhost gate: nftables drops inbound traffic except ssh,
# OpenSSL's system default refuses protocols below TLS 1.3, nouveau is
# blacklisted. What Debian cannot give a minbase image (the NVIDIA container
# runtime, LUKS at bake time) is waived in waivers-debian-12.yaml, with why:
#
#   gpuhost scan image OUT/rootfs.qcow2 --params images/params-debian-12.yaml \
#     --waivers images/waivers-debian-12.yaml
#
#   packer build -var-file=images/pins.pkrvars.hcl images/debian-12-gpu.pkr.hcl
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
  description = "Version of libnvidia-ml1 and nvidia-smi; from pins.pkrvars.hcl."
}

variable "debian_persistenced_version" {
  type        = string
  description = "Version of nvidia-persistenced; from pins.pkrvars.hcl."
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
  type    = string
  default = "2G"
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

variable "trivy_db" {
  type        = string
  description = "Offline trivy DB directory (trivy.db, metadata.json) the gate matches the image's packages against; make demo and the end-to-end test write one from images/trivy-db-demo.yaml, a release pipeline passes trivy's own (trivy --download-db-only). Required: the gate refuses an image whose critical checks did not run."
}

source "gpuhost-rootfs" "debian_12" {
  suite        = "bookworm"
  distribution = "debian"
  variant      = "minbase"
  components   = ["main", "contrib", "non-free", "non-free-firmware"]
  mirror       = var.mirror
  snapshot     = var.snapshot
  # nftables comes with the bootstrap, not a provisioner's apt-get: the
  # gpuhost-gpu manifest then lists it as baked, and no second apt-get
  # update runs. The hardening script configures and enables it.
  extra_packages = ["systemd", "ca-certificates", "nftables"]
  apt_cache_dir  = var.apt_cache_dir
  # Beside the apt cache, not in it: that one is mounted into the build.
  bootstrap_cache_dir = var.apt_cache_dir != "" ? "${var.apt_cache_dir}-bootstrap" : ""
  output_format       = "qcow2"
  output_dir          = var.output_dir
  image_size          = var.image_size
}

build {
  name    = "debian-12-gpu"
  sources = ["source.gpuhost-rootfs.debian_12"]

  # Hardening first: the gpuhost-gpu provisioner writes the manifest last,
  # and its config_files digests must be of the hardened files.
  provisioner "file" {
    sources     = ["${path.root}/files/nftables.conf", "${path.root}/files/openssl-system-default.cnf"]
    destination = "/tmp/gpuhost-harden/"
  }

  provisioner "shell" {
    script = "${path.root}/scripts/harden-debian-12.sh"
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
    # The minbase rootfs has no kernel, so there is none to hold and no DKMS:
    # the debian source installs userspace only.
    persistenced                = true
    cgroup_v2                   = true
    disable_unattended_upgrades = true
    ngc_allowed_registries      = var.ngc_allowed_registries
    dynamic "ngc_images" {
      for_each = var.ngc_images
      content {
        ref    = ngc_images.value.ref
        digest = ngc_images.value.digest
      }
    }
    manifest {
      template       = "debian-12-gpu"
      mirror         = var.mirror
      snapshot       = var.snapshot
      plugin_version = var.plugin_version
    }
  }

  # The gate scans the qcow2 with the same pipeline as `gpuhost scan image`,
  # writes its reports beside it and fails the build at fail_on. Only a
  # passing image is pushed, with its report, manifest and SBOM attached as
  # OCI referrers. The waivers cover what Debian 12 cannot provide.
  post-processor "gpuhost-gate" {
    params  = "${path.root}/params-debian-12.yaml"
    waivers = "${path.root}/waivers-debian-12.yaml"
    fail_on = "high"
    # A critical check that did not run fails the build too: without a
    # vulnerability DB, GH-SC-001 would be skipped and the image pass.
    fail_on_skip = "critical"
    trivy_db     = var.trivy_db
    publish {
      repository = var.publish_repository
      tag        = "debian-12-gpu-${formatdate("YYYYMMDD'T'hhmmss'Z'", timestamp())}"
    }
  }
}
