# Example: the same provisioner over SSH on an EC2 instance, baking an AMI,
# gated by gpuhost-scan on the instance before the AMI is registered. Only
# our provisioners run; the amazon plugin supplies the builder. With no AWS
# here, the template is checked with `packer validate -syntax-only`, and its
# gpuhost-scan block is decoded through the provisioner's spec and prepared
# (builder/scan TestAmazonEBSExample).
#
#   make build    # bin/gpuhost-agent, the lean CLI gpuhost-scan uploads
#   packer init images/amazon-ebs-gpu.pkr.hcl
#   packer build -var-file=images/pins-ubuntu-22.04.pkrvars.hcl -var trivy_db=DIR images/amazon-ebs-gpu.pkr.hcl
#
# The source AMI is Ubuntu 22.04, so the pins are the Ubuntu 22.04 template's:
# the same ubuntu2204 repositories, the same reviewed versions (its NGC
# bases are not used here; Packer warns that ngc_bases is not declared).

packer {
  required_plugins {
    gpuhost = {
      source  = "github.com/gpuhost/gpuhost"
      version = ">= 0.1.0"
    }
    amazon = {
      source  = "github.com/hashicorp/amazon"
      version = ">= 1.3.0"
    }
  }
}

variable "driver_branch" {
  type        = string
  default     = "580"
  description = "NVIDIA driver branch: 535, 550 or 580. It selects the driver and the CUDA release from pins-ubuntu-22.04.pkrvars.hcl, so a branch always gets the CUDA it runs."
  validation {
    condition     = contains(["535", "550", "580"], var.driver_branch)
    error_message = "The driver_branch must be 535, 550 or 580 (the branches pins-ubuntu-22.04.pkrvars.hcl pins)."
  }
}

variable "driver_versions" {
  type        = map(string)
  description = "Driver package version by branch in NVIDIA's CUDA repository (driver_source cuda-repo); from pins-ubuntu-22.04.pkrvars.hcl."
}

variable "driver_source" {
  type        = string
  default     = "cuda-repo"
  description = "Where the driver comes from: cuda-repo (NVIDIA's CUDA repository; DKMS builds the modules for the instance's kernel) or ubuntu-archive (the archive's restricted component: nvidia-headless-no-dkms-BRANCH-server and Canonical's precompiled, signed linux-modules-nvidia-BRANCH-server; no DKMS). The CUDA toolkit comes from NVIDIA's repository either way."
  validation {
    condition     = contains(["cuda-repo", "ubuntu-archive"], var.driver_source)
    error_message = "The driver_source must be cuda-repo or ubuntu-archive."
  }
}

variable "archive_driver_versions" {
  type        = map(string)
  description = "Driver package version by branch in the Ubuntu archive (source nvidia-graphics-drivers-BRANCH-server), for driver_source ubuntu-archive; from pins-ubuntu-22.04.pkrvars.hcl."
}

variable "cuda_versions" {
  type        = map(string)
  description = "cuda-toolkit-X-Y package version by driver branch; from pins-ubuntu-22.04.pkrvars.hcl."
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

variable "region" {
  type    = string
  default = "us-east-1"
}

variable "instance_type" {
  type        = string
  default     = "g5.xlarge"
  description = "A GPU instance is not needed to bake, but DKMS and nvidia-smi are happier on one."
}

variable "gpuhost_binary" {
  type        = string
  default     = "bin/gpuhost-agent"
  description = "The lean gpuhost CLI (linux/amd64) that gpuhost-scan uploads to collect the instance's facts before the AMI is made; `make build` writes bin/gpuhost-agent."
}

variable "trivy_db" {
  type        = string
  description = "Offline trivy DB directory (trivy.db, metadata.json) the instance's packages are matched against on the build machine; a release pipeline passes trivy's own (trivy --download-db-only). Required: the gate refuses an instance whose critical checks did not run."
}

variable "gate_fail_on" {
  type    = string
  default = "high"
}

variable "plugin_version" {
  type    = string
  default = "0.1.0"
}

source "amazon-ebs" "ubuntu_2204_gpu" {
  region        = var.region
  instance_type = var.instance_type
  ami_name      = "gpuhost-ubuntu-22.04-gpu-${var.driver_branch}-{{timestamp}}"
  ssh_username  = "ubuntu"
  communicator  = "ssh"

  source_ami_filter {
    filters = {
      name                = "ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-*"
      root-device-type    = "ebs"
      virtualization-type = "hvm"
    }
    owners      = ["099720109477"]
    most_recent = true
  }

  # EBS encrypts the volume and the AMI's snapshots (KMS, the account's
  # default key unless kms_key_id is set): encryption at rest below the
  # guest, which waivers-amazon-ebs.yaml accounts for.
  launch_block_device_mappings {
    device_name           = "/dev/sda1"
    volume_size           = 64
    volume_type           = "gp3"
    encrypted             = true
    delete_on_termination = true
  }
  encrypt_boot = true
}

build {
  sources = ["source.amazon-ebs.ubuntu_2204_gpu"]

  provisioner "gpuhost-gpu" {
    # The ssh user is not root.
    execute_command = "sudo -n sh '{{.Path}}'"

    driver {
      version = var.driver_source == "ubuntu-archive" ? var.archive_driver_versions[var.driver_branch] : var.driver_versions[var.driver_branch]
      branch  = var.driver_branch
      source  = var.driver_source
      flavor  = "open"
    }
    # The CUDA release the driver branch runs, from the same pins file.
    cuda {
      version = var.cuda_versions[var.driver_branch]
    }
    container_toolkit {
      version = var.container_toolkit_version
    }
    containerd {
      systemd_cgroup = true
      cdi            = true
    }
    hold {
      kernel = true
    }
    keyring_sha256 {
      cuda_keyring          = var.cuda_keyring_sha256
      container_toolkit_key = var.container_toolkit_key_sha256
    }
    # distro and target_kernel are read from the instance: on a booted host
    # the only kernel under /lib/modules is the one running.
    persistenced                = true
    cgroup_v2                   = true
    disable_unattended_upgrades = true
    # The same hardening as the other templates, but the host keys stay:
    # cloud-init makes each instance its own at first boot, and this build
    # goes on logging in over ssh. cloud-init also names each instance, so
    # no hostname is set. Instances admit only the role groups, admins
    # with a one-time code after their key: give cloud-init's default user
    # a role in user-data (system_info.default_user.groups) and enroll it.
    hardening {
      ssh {
        host_keys = "keep"
      }
    }
    # The instance is a booted host, not an image in a chroot: the plan's
    # last hardening step loads what it wrote (the nftables ruleset, the
    # audit rules, journald's and sshd's settings; sshd is reloaded, and
    # this build's open session stays), so that gpuhost-scan below judges
    # the hardened daemons rather than the source AMI's.
    live = true
    manifest {
      template       = "amazon-ebs-gpu"
      plugin_version = var.plugin_version
    }
  }

  # The gate. An AMI is not a disk file the gpuhost-gate post-processor can
  # read (it takes a .qcow2/.raw/.img or a rootfs directory), so here the
  # instance itself is judged, last, before the AMI is registered:
  # gpuhost-scan uploads the lean CLI, collects `facts host` on the instance
  # as root (its kernel's ruleset and running daemons, which the
  # gpuhost-gpu plan has loaded with live = true), removes what it staged,
  # and judges the facts on this machine
  # with the gate's settings. The build fails when a check fails at or above
  # gate_fail_on, a critical check did not run, or the scan cannot be
  # trusted; the reports land in out/ either way.
  provisioner "gpuhost-scan" {
    gpuhost_binary = var.gpuhost_binary
    fail_on        = var.gate_fail_on
    fail_on_skip   = "critical"
    trivy_db       = var.trivy_db
    # The Ubuntu 22.04 template's params (the same image, the same pins),
    # and the waiver for the encryption EBS does below the guest.
    params        = "${path.root}/params-ubuntu-22.04.yaml"
    waivers       = "${path.root}/waivers-amazon-ebs.yaml"
    report_prefix = "out/amazon-ebs-gpu"
  }
}
