package gpu

import (
	"strconv"
	"strings"
	"unicode"
)

// The compatibility matrix. It lives here, in Go, and reaches policy only
// through the facts (gpu_driver.max_cuda, and per device architecture,
// min_driver_branch, open_module_supported, open_module_required), so the
// Rego pack never carries a second copy that could drift.
//
// Sources: NVIDIA's CUDA release notes (table "CUDA Toolkit and Corresponding
// Driver Versions": the first driver of each branch that shipped with a CUDA
// release) and the open GPU kernel modules README (supported from Turing on;
// Blackwell is driven only by the open modules).

// cudaByBranch lists, oldest first, each driver branch and the newest CUDA
// release it supports. A branch between two rows supports what the lower row
// says (a new-feature branch never lowers the CUDA version).
var cudaByBranch = []struct {
	branch int
	cuda   string
}{
	{450, "11.0"},
	{455, "11.1"},
	{460, "11.2"},
	{465, "11.3"},
	{470, "11.4"},
	{495, "11.5"},
	{510, "11.6"},
	{515, "11.7"},
	{520, "11.8"},
	{525, "12.0"},
	{530, "12.1"},
	{535, "12.2"},
	{545, "12.3"},
	{550, "12.4"},
	{555, "12.5"},
	{560, "12.6"},
	{565, "12.7"},
	{570, "12.8"},
	{575, "12.9"},
	{580, "13.0"},
}

// OldestBranch is the oldest driver branch the matrix knows.
func OldestBranch() int { return cudaByBranch[0].branch }

// MaxCUDA returns the newest CUDA version (MAJOR.MINOR) that driver branch
// supports. ok is false for a branch older than the table, and for one newer
// than its last row: such a branch supports at least that row's CUDA, but
// claiming an exact maximum would fail toolkits it in fact supports.
func MaxCUDA(branch int) (cuda string, ok bool) {
	first, last := cudaByBranch[0], cudaByBranch[len(cudaByBranch)-1]
	if branch < first.branch || branch > last.branch+4 {
		return "", false
	}
	for i := len(cudaByBranch) - 1; i >= 0; i-- {
		if cudaByBranch[i].branch <= branch {
			return cudaByBranch[i].cuda, true
		}
	}
	return "", false
}

// Arch is what the matrix knows about one GPU architecture or model.
type Arch struct {
	// Name is the architecture, lower case: "ampere", "hopper"...
	Name string
	// MinBranch is the oldest driver branch that supports the GPU.
	MinBranch int
	// OpenSupported says whether the open kernel modules drive it;
	// OpenRequired whether only they do.
	OpenSupported bool
	OpenRequired  bool
}

var archs = map[string]Arch{
	"maxwell":   {Name: "maxwell", MinBranch: 346},
	"pascal":    {Name: "pascal", MinBranch: 367},
	"volta":     {Name: "volta", MinBranch: 384},
	"turing":    {Name: "turing", MinBranch: 410, OpenSupported: true},
	"ampere":    {Name: "ampere", MinBranch: 450, OpenSupported: true},
	"ada":       {Name: "ada", MinBranch: 525, OpenSupported: true},
	"hopper":    {Name: "hopper", MinBranch: 525, OpenSupported: true},
	"blackwell": {Name: "blackwell", MinBranch: 570, OpenSupported: true, OpenRequired: true},
}

// models maps a model token from the device name to its architecture, and
// raises the minimum branch where a model came later than its architecture.
var models = map[string]struct {
	arch      string
	minBranch int
}{
	"M40": {"maxwell", 0}, "M60": {"maxwell", 0},
	"P100": {"pascal", 0}, "P40": {"pascal", 0}, "P4": {"pascal", 0},
	"V100": {"volta", 0},
	"T4":   {"turing", 0},
	"A100": {"ampere", 0}, "A800": {"ampere", 0}, "A30": {"ampere", 0}, "A40": {"ampere", 0},
	"A10": {"ampere", 0}, "A16": {"ampere", 0}, "A2": {"ampere", 0},
	"L4": {"ada", 0}, "L40": {"ada", 0}, "L20": {"ada", 0},
	"H100": {"hopper", 0}, "H800": {"hopper", 0}, "H20": {"hopper", 0},
	"H200": {"hopper", 535}, "GH200": {"hopper", 535},
	"B100": {"blackwell", 0}, "B200": {"blackwell", 0}, "GB200": {"blackwell", 0},
	"B300": {"blackwell", 0}, "GB300": {"blackwell", 0},
}

// ArchOf maps an NVML device name ("NVIDIA A100-SXM4-40GB", "Tesla T4",
// "NVIDIA L40S") to what the matrix knows of it. A name token matches a model
// exactly or with one trailing letter (L40S, A10G); ok is false when no token
// matches.
func ArchOf(name string) (Arch, bool) {
	tokens := strings.FieldsFunc(strings.ToUpper(name), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r)
	})
	for _, tok := range tokens {
		m, found := models[tok]
		if !found && len(tok) > 2 && unicode.IsLetter(rune(tok[len(tok)-1])) {
			m, found = models[tok[:len(tok)-1]]
		}
		if !found {
			continue
		}
		a := archs[m.arch]
		a.MinBranch = max(a.MinBranch, m.minBranch)
		return a, true
	}
	return Arch{}, false
}

// ArchByName returns the matrix entry for an architecture name as NVML's
// GetArchitecture reports it, for devices whose model name is unknown.
func ArchByName(arch string) (Arch, bool) {
	a, ok := archs[strings.ToLower(arch)]
	return a, ok
}

// Branch returns the major part of a driver version ("535.261.03" -> 535).
func Branch(version string) (int, bool) {
	major, _, _ := strings.Cut(version, ".")
	n, err := strconv.Atoi(major)
	if err != nil || n <= 0 || n > 9999 {
		return 0, false
	}
	return n, true
}
