# End-to-end template of the rootfs builder test (TestE2EPackerBuild): a
# bookworm minbase from this machine's own Debian mirror, one shell
# provisioner. Variables come from the test.
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

variable "output_format" {
  type    = string
  default = "dir"
}

variable "image_size" {
  type    = string
  default = ""
}

# Seconds the provisioner sleeps after its checks: the interrupt tests stop
# the build while it sleeps.
variable "provision_sleep" {
  type    = string
  default = "0"
}

variable "apt_cache_dir" {
  type    = string
  default = ""
}

variable "bootstrap_cache_dir" {
  type    = string
  default = ""
}

source "gpuhost-rootfs" "e2e" {
  suite               = "bookworm"
  variant             = "minbase"
  output_format       = var.output_format
  output_dir          = var.output_dir
  apt_cache_dir       = var.apt_cache_dir
  bootstrap_cache_dir = var.bootstrap_cache_dir
  image_size          = var.image_size
}

build {
  sources = ["source.gpuhost-rootfs.e2e"]

  provisioner "shell" {
    inline = [
      "echo hello > /etc/hello",
      "test -e /proc/self/status",
      "test -c /dev/null",
      "test -x /usr/sbin/policy-rc.d",
      "echo provisioner-ready; sleep ${var.provision_sleep}",
    ]
  }
}
