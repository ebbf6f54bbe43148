package qemu

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// version is the first line qemu --version prints, or why there is none.
func version(ctx context.Context, qemu string) string {
	out, err := exec.CommandContext(ctx, qemu, "--version").Output()
	if err != nil {
		return fmt.Sprintf("%s --version: %v", qemu, err)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	return strings.TrimSpace(first)
}
