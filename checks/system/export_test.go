package system

import "github.com/gpuhost/gpuhost/checks/sysroot"

var sysrootOpen = sysroot.Open
