package facts

// GPU is filled by the NVML collector on a host, and by the offline driver
// collector in an image.
type GPU struct {
	Available           bool         `json:"available"`
	Reason              string       `json:"reason,omitempty"`
	DriverVersion       string       `json:"driver_version,omitempty"`
	CUDADriverVersion   string       `json:"cuda_driver_version,omitempty"`
	NVMLVersion         string       `json:"nvml_version,omitempty"`
	KernelModuleVersion string       `json:"kernel_module_version,omitempty"`
	Devices             []GPUDevice  `json:"devices"`
	ConfCompute         *ConfCompute `json:"conf_compute,omitempty"`
	XIDEvents           []XIDEvent   `json:"xid_events"`
	// KernelModuleType is "open" or "proprietary", from /proc/driver/nvidia/version.
	KernelModuleType string `json:"kernel_module_type,omitempty" jsonschema:"enum=open,enum=proprietary"`
	// DriverBranch is the major part of DriverVersion (535 for 535.261.03).
	DriverBranch int `json:"driver_branch,omitempty" jsonschema:"minimum=0"`
	// DriverMismatch is true when NVML refused to start because the user-space
	// library and the loaded kernel module differ (ERROR_LIB_RM_VERSION_MISMATCH).
	DriverMismatch bool `json:"driver_mismatch,omitempty"`
	// Unsupported lists system-level queries NVML answered NOT_SUPPORTED.
	Unsupported []string `json:"unsupported,omitempty" factschema:"notnull"`
	// XIDSource names the kernel log files the XID events were read from;
	// XIDError says why they could not be read, and then XIDEvents proves nothing.
	XIDSource string `json:"xid_source,omitempty"`
	XIDError  string `json:"xid_error,omitempty"`
	// Validation is filled by the gpu_validation collector, which runs only
	// when asked (gpuhost agent --gpu-validate).
	Validation *GPUValidation `json:"validation,omitempty"`
}

// PCI lists the NVIDIA functions on the host's PCI bus, read from sysfs
// without NVML, so that a host whose driver or NVML is down still shows which
// GPUs it has.
type PCI struct {
	Devices []PCIDevice `json:"devices"`
}

// PCIDevice is one NVIDIA PCI function. Class is the 24-bit class code as
// sysfs prints it (0x030200 is a 3D controller, 0x030000 a VGA one, 0x068000
// an NVSwitch bridge); GPU is true for the display classes (0x03xxxx).
type PCIDevice struct {
	Address  string `json:"address"`
	Vendor   string `json:"vendor"`
	Device   string `json:"device"`
	Class    string `json:"class"`
	GPU      bool   `json:"gpu"`
	Driver   string `json:"driver,omitempty"`
	NUMANode *int   `json:"numa_node,omitempty"`
	// AER is what the function's PCIe Advanced Error Reporting counters
	// say since boot; nil for a function without them (no AER capability,
	// or a kernel before 4.19).
	AER *AER `json:"aer,omitempty"`
	// AERError says why the counters could not be read.
	AERError string `json:"aer_error,omitempty"`
}

// InfiniBand is a live host's RDMA ports as /sys/class/infiniband lists
// them (InfiniBand, and RoCE on Ethernet), and whether GPUDirect RDMA can
// reach the GPUs' memory.
type InfiniBand struct {
	Ports []IBPort `json:"ports"`
	// PeerMem is true when nvidia_peermem (or the older nv_peer_mem) is
	// loaded: without it an HCA cannot read or write GPU memory directly.
	PeerMem bool `json:"peermem"`
}

// IBPort is one port of an RDMA device.
type IBPort struct {
	// Device and Port name it: mlx5_0 port 1.
	Device string `json:"device"`
	Port   int    `json:"port" jsonschema:"minimum=0"`
	// State and PhysState are the logical and physical states without
	// their numbers: ACTIVE, DOWN, INIT; LinkUp, Polling, Disabled.
	State     string `json:"state"`
	PhysState string `json:"phys_state"`
	// RateGbps is the negotiated rate ("400 Gb/sec (4X NDR)" is 400).
	RateGbps float64 `json:"rate_gbps" jsonschema:"minimum=0"`
	// LinkLayer is InfiniBand or Ethernet (RoCE).
	LinkLayer string `json:"link_layer"`
	// LinkDowned counts the times the link went down since the counters
	// were cleared; nil where the port has no such counter.
	LinkDowned *int64 `json:"link_downed,omitempty" jsonschema:"minimum=0"`
	// Error says why the port could not be read.
	Error string `json:"error,omitempty"`
}

// AER is a PCI function's Advanced Error Reporting totals: the TOTAL_
// lines of its aer_dev_correctable, aer_dev_nonfatal and aer_dev_fatal.
type AER struct {
	Correctable int64 `json:"correctable" jsonschema:"minimum=0"`
	NonFatal    int64 `json:"nonfatal" jsonschema:"minimum=0"`
	Fatal       int64 `json:"fatal" jsonschema:"minimum=0"`
}

// GPUDevice is one GPU as NVML sees it. Pointer fields are nil when the GPU
// reports NOT_SUPPORTED, so a policy can skip rather than guess.
type GPUDevice struct {
	Index           int           `json:"index" jsonschema:"minimum=0"`
	UUID            string        `json:"uuid"`
	Name            string        `json:"name"`
	PCIBusID        string        `json:"pci_bus_id"`
	ECC             *ECC          `json:"ecc,omitempty"`
	RetiredPages    *RetiredPages `json:"retired_pages,omitempty"`
	RemappedRows    *RemappedRows `json:"remapped_rows,omitempty"`
	PersistenceMode *bool         `json:"persistence_mode,omitempty"`
	MIG             *MIG          `json:"mig,omitempty"`
	TemperatureC    *int          `json:"temperature_c,omitempty"`
	PCIe            *PCIe         `json:"pcie,omitempty"`
	NVLink          []NVLink      `json:"nvlink"`
	Unsupported     []string      `json:"unsupported,omitempty" factschema:"notnull"`
	// TemperatureSlowdownC is the temperature at which the GPU starts to slow down.
	TemperatureSlowdownC *int `json:"temperature_slowdown_c,omitempty"`
	// PowerW and PowerLimitW are the draw and the enforced limit, in watts.
	PowerW      *float64 `json:"power_w,omitempty" jsonschema:"minimum=0"`
	PowerLimitW *float64 `json:"power_limit_w,omitempty" jsonschema:"minimum=0"`
	// ThrottleReasons names the active clock event (throttle) reasons.
	ThrottleReasons []string `json:"throttle_reasons,omitempty" factschema:"notnull"`
	// VBIOSVersion is the video BIOS the GPU runs.
	VBIOSVersion string `json:"vbios_version,omitempty"`
	// InfoROMValid is false when the InfoROM fails NVML's checksum
	// validation: the ECC, retired-page and remapped-row records it keeps
	// can no longer be trusted. nil when it could not be asked.
	InfoROMValid *bool `json:"inforom_valid,omitempty"`
	// Architecture, MinDriverBranch and OpenModuleSupported come from the
	// compatibility matrix for this GPU model; empty or zero when unknown.
	Architecture        string `json:"architecture,omitempty"`
	MinDriverBranch     int    `json:"min_driver_branch,omitempty" jsonschema:"minimum=0"`
	OpenModuleSupported *bool  `json:"open_module_supported,omitempty"`
	// OpenModuleRequired is true for GPUs that only the open kernel module drives.
	OpenModuleRequired bool `json:"open_module_required,omitempty"`
	// Errors lists queries that failed for a reason other than NOT_SUPPORTED
	// (a timeout, a lost GPU): those fields are nil and prove nothing.
	Errors []string `json:"errors,omitempty" factschema:"notnull"`
}

// ECC mode and uncorrected error counts.
type ECC struct {
	Current              bool  `json:"current"`
	Pending              bool  `json:"pending"`
	UncorrectedVolatile  int64 `json:"uncorrected_volatile" jsonschema:"minimum=0"`
	UncorrectedAggregate int64 `json:"uncorrected_aggregate" jsonschema:"minimum=0"`
}

// RetiredPages applies to pre-Ampere GPUs.
type RetiredPages struct {
	Pending bool `json:"pending"`
	Count   int  `json:"count" jsonschema:"minimum=0"`
}

// RemappedRows applies to Ampere and later.
type RemappedRows struct {
	Correctable   int  `json:"correctable" jsonschema:"minimum=0"`
	Uncorrectable int  `json:"uncorrectable" jsonschema:"minimum=0"`
	Pending       bool `json:"pending"`
	Failed        bool `json:"failed"`
}

// MIG mode.
type MIG struct {
	Current bool `json:"current"`
	Pending bool `json:"pending"`
}

// PCIe link state against the link's capability.
type PCIe struct {
	GenCurrent   int `json:"gen_current" jsonschema:"minimum=0"`
	GenMax       int `json:"gen_max" jsonschema:"minimum=0"`
	WidthCurrent int `json:"width_current" jsonschema:"minimum=0"`
	WidthMax     int `json:"width_max" jsonschema:"minimum=0"`
}

// NVLink is one link's state.
type NVLink struct {
	Link   int  `json:"link" jsonschema:"minimum=0"`
	Active bool `json:"active"`
}

// ConfCompute is the system's confidential-computing state.
type ConfCompute struct {
	Feature      string `json:"feature"`
	DevtoolsMode string `json:"devtools_mode"`
	Environment  string `json:"environment"`
}

// XIDEvent is one Xid line from the kernel log or the journal.
type XIDEvent struct {
	Code     int    `json:"code" jsonschema:"minimum=0"`
	PCIBusID string `json:"pci_bus_id"`
	Time     string `json:"time,omitempty"`
	// Message is the rest of the line after the code, bounded in length.
	Message string `json:"message,omitempty"`
	// Source is where the event was read: a log file ("/var/log/kern.log.2.gz")
	// or "journal".
	Source string `json:"source,omitempty"`
	// GPUs are the GPUs NVML lists at the event's PCI address. It is empty
	// when NVML could not say: the driver is down, or the GPU fell off the
	// bus and out of NVML's list.
	GPUs []XIDGPU `json:"gpus,omitempty" factschema:"notnull"`
}

// XIDGPU names a GPU an Xid event was logged for.
type XIDGPU struct {
	Index int    `json:"index" jsonschema:"minimum=0"`
	UUID  string `json:"uuid"`
}

// GPUDriver is the NVIDIA stack as installed, read from the package database
// and the file system: it is the same in an image and on a host.
type GPUDriver struct {
	// Packages are the installed NVIDIA driver, kernel module and CUDA packages.
	Packages []Package `json:"packages"`
	// Version is the driver's upstream version (535.261.03), Branch its major part.
	Version string `json:"version,omitempty"`
	Branch  int    `json:"branch,omitempty" jsonschema:"minimum=0"`
	// Flavor is "open" when the open kernel modules are installed, else
	// "proprietary"; empty when no driver package is installed.
	Flavor string `json:"flavor,omitempty" jsonschema:"enum=open,enum=proprietary"`
	// Modules maps each installed kernel release to the nvidia*.ko files found for it.
	Modules map[string][]string `json:"modules"`
	// NouveauBlacklisted says whether nouveau is kept from loading, and NouveauSource where.
	NouveauBlacklisted bool   `json:"nouveau_blacklisted"`
	NouveauSource      string `json:"nouveau_source,omitempty"`
	// PersistencedEnabled and FabricManagerEnabled come from the enabled systemd units.
	PersistencedEnabled  bool `json:"persistenced_enabled"`
	FabricManagerEnabled bool `json:"fabricmanager_enabled"`
	// CUDAToolkitVersion is the newest installed toolkit as MAJOR.MINOR, and
	// CUDAToolkitSource the package or file it came from.
	CUDAToolkitVersion string `json:"cuda_toolkit_version,omitempty" jsonschema:"pattern=^[0-9]+\\.[0-9]+$"`
	CUDAToolkitSource  string `json:"cuda_toolkit_source,omitempty"`
	// MaxCUDA is the newest CUDA the installed branch supports, from the
	// compatibility matrix; empty when the branch is unknown to it.
	MaxCUDA string `json:"max_cuda,omitempty" jsonschema:"pattern=^[0-9]+\\.[0-9]+$"`
}

// The statuses of a validation step and of each GPU within one.
const (
	ValidationPassed = "passed"
	ValidationFailed = "failed"
	ValidationNotRun = "not_run"
)

// GPUValidation is what `gpuhost validate` (or the agent's gpu_validation
// collector) found when it held the node to gpu-operator's validator
// sequence: the driver, a container through the toolkit and CDI, a CUDA
// sample on each GPU, the NVSwitch fabric and the MIG mode.
type GPUValidation struct {
	// GPUs are the GPUs NVML listed, which every step is held to.
	GPUs []ValidationGPU `json:"gpus"`
	// Steps are in the order they ran.
	Steps []ValidationStep `json:"steps"`
}

// ValidationGPU is one GPU as NVML listed it.
type ValidationGPU struct {
	Index int    `json:"index" jsonschema:"minimum=0"`
	UUID  string `json:"uuid"`
	Name  string `json:"name"`
}

// ValidationStep is one step's outcome. A step that could not run says
// not_run and why, never passed; Required says whether the node needed it
// to run (a step left out on purpose, or the fabric on a node without
// NVSwitches, is not required).
type ValidationStep struct {
	Name     string `json:"name" jsonschema:"enum=driver,enum=container,enum=cuda,enum=fabric,enum=mig"`
	Status   string `json:"status" jsonschema:"enum=passed,enum=failed,enum=not_run"`
	Required bool   `json:"required"`
	Reason   string `json:"reason"`
	// GPUs is the step's verdict on each GPU, where it judges them one by one.
	GPUs []ValidationGPUResult `json:"gpus,omitempty" factschema:"notnull"`
}

// ValidationGPUResult is one step's verdict on one GPU.
type ValidationGPUResult struct {
	Index  int    `json:"index" jsonschema:"minimum=0"`
	UUID   string `json:"uuid"`
	Status string `json:"status" jsonschema:"enum=passed,enum=failed,enum=not_run"`
	Detail string `json:"detail"`
}
