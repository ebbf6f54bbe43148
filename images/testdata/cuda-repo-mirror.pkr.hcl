# The production cuda-repo path against a local signed stand-in of NVIDIA's
# CUDA and libnvidia-container repositories (internal/testutil/nvidiarepo),
# on a Debian 12 base: TestE2ECUDARepoMirror serves the repositories on
# 127.0.0.1 and bakes this template, then bakes it again with a wrong
# keyring digest and with a driver version the repository does not have,
# and, with lock_file, from the lock of the first bake (TestE2ECUDARepoMirror's
# locked subtests).
# The gpuhost-rootfs chroot shares the build machine's network, so the
# plan reaches the mirror on loopback. Every variable comes from the test.
packer {
  required_plugins {
    gpuhost = {
      version = ">= 0.1.0"
      source  = "github.com/gpuhost/gpuhost"
    }
  }
}

variable "output_dir" {
  type = string
}

variable "apt_cache_dir" {
  type = string
}

variable "bootstrap_cache_dir" {
  type = string
}

variable "cuda_repositories" {
  type        = string
  description = "The stand-in's directory of CUDA repositories (repositories.cuda)."
}

variable "toolkit_repository" {
  type = string
}

variable "toolkit_key" {
  type = string
}

variable "cuda_keyring_sha256" {
  type = string
}

variable "toolkit_key_sha256" {
  type = string
}

variable "driver_version" {
  type = string
}

variable "cuda_version" {
  type = string
}

variable "container_toolkit_version" {
  type = string
}

variable "dkms_signing_key" {
  type        = string
  description = "The RSA key DKMS signs the module with: the same in every bake, so that bakes can be compared."
}

variable "dkms_signing_certificate" {
  type = string
}

variable "lock_file" {
  type        = string
  default     = ""
  description = "A lock file both the builder and the provisioner hold the bake to; empty for none."
}

variable "target_kernel" {
  type        = string
  description = "The kernel DKMS builds the module for: its headers come from the Debian archive."
}

source "gpuhost-rootfs" "cuda_repo" {
  suite               = "bookworm"
  variant             = "minbase"
  output_format       = "dir"
  output_dir          = var.output_dir
  apt_cache_dir       = var.apt_cache_dir
  bootstrap_cache_dir = var.bootstrap_cache_dir
  lock_file           = var.lock_file
}

build {
  sources = ["source.gpuhost-rootfs.cuda_repo"]

  provisioner "gpuhost-gpu" {
    driver {
      version = var.driver_version
      source  = "cuda-repo"
    }
    cuda {
      version = var.cuda_version
    }
    container_toolkit {
      version = var.container_toolkit_version
    }
    fabric_manager = true
    persistenced   = true
    target_kernel  = var.target_kernel
    lock_file      = var.lock_file
    dkms {
      signing_key         = var.dkms_signing_key
      signing_certificate = var.dkms_signing_certificate
    }
    keyring_sha256 {
      cuda_keyring          = var.cuda_keyring_sha256
      container_toolkit_key = var.toolkit_key_sha256
    }
    repositories {
      cuda                  = var.cuda_repositories
      container_toolkit     = var.toolkit_repository
      container_toolkit_key = var.toolkit_key
    }
    manifest {
      template = "e2e-cuda-repo-mirror"
    }
  }
}
