package packages

import (
	"bytes"
	"fmt"
	"strings"
)

// SyntheticDpkgStatus returns a dpkg status file of n installed packages
// shaped like a GPU host image: base system packages, the NVIDIA driver,
// CUDA and container toolkit packages (some held, as the provisioner holds
// them), several architectures, multi-line Description fields of realistic
// length, and a few removed-but-configured stanzas that must be skipped.
// Benchmarks and `make bench` use it to build large trees without shipping
// a real database.
func SyntheticDpkgStatus(n int) []byte {
	nvidia := []string{
		"nvidia-driver-535-server", "nvidia-utils-535-server", "libnvidia-compute-535-server",
		"nvidia-kernel-common-535-server", "nvidia-fabricmanager-535", "nvidia-container-toolkit",
		"nvidia-container-toolkit-base", "libnvidia-container-tools", "libnvidia-container1",
		"cuda-toolkit-12-2", "cuda-compiler-12-2", "cuda-libraries-12-2", "libcudnn8", "libnccl2",
		"datacenter-gpu-manager", "nvidia-persistenced",
	}
	base := []string{"libc6", "systemd", "openssh-server", "openssl", "containerd", "linux-image", "python3", "coreutils"}
	var b bytes.Buffer
	desc := strings.Repeat(" This synthetic package stands in for a real one so that parsers see realistic field lengths.\n", 6)
	for i := 0; i < n; i++ {
		var name, version, arch string
		held := false
		switch {
		case i < len(nvidia):
			name, version, arch = nvidia[i], fmt.Sprintf("535.%d.03-0ubuntu1", 100+i), "amd64"
			held = true
		case i < len(nvidia)+len(base):
			name, version, arch = base[i-len(nvidia)], fmt.Sprintf("%d.%d-1ubuntu%d", 2+i%7, i%13, i%3), "amd64"
		default:
			name = fmt.Sprintf("lib-synthetic%05d", i)
			version = fmt.Sprintf("1:%d.%d.%d-%d", i%9, i%17, i%23, 1+i%4)
			arch = [...]string{"amd64", "all", "i386"}[i%3]
		}
		want := "install"
		if held {
			want = "hold"
		}
		status := want + " ok installed"
		if i >= len(nvidia)+len(base) && i%50 == 49 {
			status = "deinstall ok config-files"
		}
		fmt.Fprintf(&b, "Package: %s\nStatus: %s\nPriority: optional\nSection: libs\nInstalled-Size: %d\n", name, status, 100+i%5000)
		fmt.Fprintf(&b, "Maintainer: Synthetic Maintainers <synthetic@example.invalid>\nArchitecture: %s\n", arch)
		if arch != "all" {
			b.WriteString("Multi-Arch: same\n")
		}
		fmt.Fprintf(&b, "Version: %s\nDepends: libc6 (>= 2.34), libgcc-s1 (>= 3.0)\n", version)
		fmt.Fprintf(&b, "Description: synthetic package %d for benchmarks\n%s", i, desc)
		b.WriteString("Homepage: https://example.invalid/\n\n")
	}
	return b.Bytes()
}
