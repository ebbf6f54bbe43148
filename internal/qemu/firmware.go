package qemu

import (
	"errors"
	"fmt"
	"os"

	"github.com/gpuhost/gpuhost/internal/ovmfvars"
)

// Firmware is what the VM boots with.
type Firmware string

// The firmwares a VM boots with. UEFISecureBoot is OVMF with Secure Boot
// enforced and Microsoft's keys enrolled, as on most x86 servers: it loads
// only what shim, signed by Microsoft's UEFI CA, lets through.
const (
	UEFI           Firmware = "uefi"
	UEFISecureBoot Firmware = "uefi-secureboot"
	BIOS           Firmware = "bios"
)

// Debian's ovmf package. The Secure Boot build keeps its variables behind
// SMM, so that the OS cannot write them past the firmware's checks; its
// variables file enrols Microsoft's PK, KEK and db.
const (
	OVMFCode           = "/usr/share/OVMF/OVMF_CODE_4M.fd"
	OVMFVars           = "/usr/share/OVMF/OVMF_VARS_4M.fd"
	OVMFCodeSecureBoot = "/usr/share/OVMF/OVMF_CODE_4M.secboot.fd"
	OVMFVarsMicrosoft  = "/usr/share/OVMF/OVMF_VARS_4M.ms.fd"
)

// prepareVars makes the UEFI variables of a new VM from the firmware's,
// with the MOK list when asked; a VM that has its own keeps them.
func (c *Config) prepareVars() error {
	if c.Firmware == BIOS {
		return nil
	}
	code, vars := c.Firmware.files()
	if _, err := os.Stat(code); err != nil {
		return fmt.Errorf("UEFI firmware: %w (Debian package ovmf)", err)
	}
	if _, err := os.Stat(c.VarsFile); !errors.Is(err, os.ErrNotExist) {
		if err == nil && len(c.MOKCerts) > 0 {
			// Enrolling into variables a VM already has would change the
			// host a kept overlay boots; not enrolling would drop the MOK
			// without a word.
			return fmt.Errorf("MOK certificates are enrolled in a new VM's UEFI variables, and %s exists already: boot with a new overlay, or without them", c.VarsFile)
		}
		return err
	}
	if len(c.MOKCerts) > 0 {
		if err := ovmfvars.WithMokList(vars, c.VarsFile, c.MOKCerts...); err != nil {
			return fmt.Errorf("UEFI variables: %w (Debian package ovmf)", err)
		}
		return nil
	}
	b, err := os.ReadFile(vars)
	if err != nil {
		return fmt.Errorf("UEFI variables: %w (Debian package ovmf)", err)
	}
	return os.WriteFile(c.VarsFile, b, 0o644)
}

// files are the firmware's code and the variables a new VM starts from.
func (f Firmware) files() (code, vars string) {
	if f == UEFISecureBoot {
		return OVMFCodeSecureBoot, OVMFVarsMicrosoft
	}
	return OVMFCode, OVMFVars
}
