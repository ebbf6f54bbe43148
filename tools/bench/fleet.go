package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/gpuhost/gpuhost/facts"
)

// realisticFleet turns one facts document into n hosts the way a GPU fleet
// looks when each host saved `gpuhost facts host` with its baseline, as the
// agent's drift run does: live host documents, so every live check runs
// (GPU, listeners, TLS probes) and the drift checks compare each host with
// its image's manifest. The hosts are baked from three images (the package
// inventory, configuration and manifest shared within an image), while what
// a running GPU host reports differs host by host: its name and scan time,
// eight GPUs with their own UUIDs, bus ids and temperatures, error counters
// that are mostly zero, Xid events on a few hosts, the PIDs behind its
// sockets, and on one host in twenty a drifted package version or a released
// hold.
func realisticFleet(doc []byte, n int) ([]byte, error) {
	var base facts.Facts
	if err := json.Unmarshal(doc, &base); err != nil {
		return nil, fmt.Errorf("parsing facts: %w", err)
	}
	if len(base.Packages) == 0 {
		return nil, fmt.Errorf("the facts document lists no packages to vary")
	}
	base.Target.Kind = "host"
	for _, c := range []string{"gpu", "network", "tls_probe", "manifest", "config_files"} {
		base.Record(c, facts.StatusOK, "")
	}
	if base.TLS == nil {
		base.TLS = &facts.TLS{}
	}
	base.TLS.Probes = []facts.TLSProbe{{Address: "0.0.0.0:443", TLS13Accepted: true}}
	if base.Audit != nil {
		// A running host's kernel holds what its rules files load.
		a := *base.Audit
		a.Kernel = &facts.AuditKernel{Unloaded: []facts.AuditRule{}, Unexpected: []facts.AuditRule{}}
		for _, r := range a.Rules {
			if r.Kind == "watch" || r.Kind == "syscall" {
				a.Kernel.Rules = append(a.Kernel.Rules, r)
			}
		}
		base.Audit = &a
	}
	configFiles := []facts.ConfigFile{
		{Path: "/etc/containerd/config.toml", SHA256: strings.Repeat("ab", 32)},
		{Path: "/etc/default/grub", SHA256: strings.Repeat("cd", 32)},
		{Path: "/etc/ssh/sshd_config", SHA256: strings.Repeat("ef", 32)},
	}
	var manifests [3]map[string]any
	for image := range manifests {
		kernel := ""
		if base.Kernel != nil {
			kernel = base.Kernel.Release
		}
		manifests[image] = imageManifest(base.Packages, kernel, image, configFiles)
	}
	start := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for i := range n {
		f := base
		image := i % 3
		f.Target.Ref = fmt.Sprintf("gpu-node-%05d", i)
		f.Target.Hostname = f.Target.Ref
		f.Target.ScannedAt = start.Add(time.Duration(i) * time.Second).Format(time.RFC3339)
		f.Packages = hostPackages(base.Packages, image, i)
		f.GPU = hostGPU(image, i)
		f.Network = hostNetwork(base.Network, i)
		f.Manifest = manifests[image]
		f.ConfigFiles = configFiles
		if err := enc.Encode(&f); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// imageManifest is the baseline an image was baked with: its inventory,
// the stack it pins and holds, and its configuration files' digests.
func imageManifest(base []facts.Package, kernel string, image int, configFiles []facts.ConfigFile) map[string]any {
	pkgs := hostPackages(base, image, 0)
	inventory := make([]map[string]any, len(pkgs))
	for i, p := range pkgs {
		inventory[i] = map[string]any{"name": p.Name, "version": p.Version, "arch": p.Arch, "held": p.Held}
	}
	files := make([]map[string]any, len(configFiles))
	for i, c := range configFiles {
		files[i] = map[string]any{"path": c.Path, "sha256": c.SHA256}
	}
	return map[string]any{
		"schema": "gpuhost.manifest/v1",
		"pins": map[string]any{
			"packages":   []map[string]any{{"name": pkgs[0].Name, "version": pkgs[0].Version, "held": true}},
			"ngc_images": []any{},
			"driver":     imageDrivers[image] + "-1",
			"kernel":     kernel,
		},
		"packages":     inventory,
		"config_files": files,
		"build":        map[string]any{"plugin_version": "bench", "time": "2025-02-01T00:00:00Z", "template": fmt.Sprintf("image-%d", image)},
	}
}

// hostPackages is the image's inventory, drifted on one host in twenty.
func hostPackages(base []facts.Package, image, host int) []facts.Package {
	pkgs := make([]facts.Package, len(base))
	copy(pkgs, base)
	// Each image pins its own build of the first package and holds it.
	pkgs[0].Version += fmt.Sprintf("+image%d", image)
	pkgs[0].Held = true
	switch host % 20 {
	case 7:
		last := &pkgs[len(pkgs)-1]
		last.Version += "+drift1"
	case 13:
		pkgs[0].Held = false
	}
	return pkgs
}

// imageDrivers is the NVIDIA driver each image pins.
var imageDrivers = [3]string{"535.261.03", "550.163.01", "570.172.08"}

// hostGPU is an eight-GPU host's live state.
func hostGPU(image, host int) *facts.GPU {
	// Temperatures scatter as a real fleet's do: no two hosts read alike,
	// so the temperature check is evaluated for every host.
	temp := func(d int) *int { t := 31 + int(mix(uint64(host*8+d))%45); return &t }
	on := true
	g := &facts.GPU{
		Available: true, DriverVersion: imageDrivers[image],
		CUDADriverVersion: []string{"12.2", "12.4", "12.8"}[image], DriverBranch: []int{535, 550, 570}[image],
		KernelModuleType: "proprietary", XIDSource: "/var/log/kern.log",
	}
	g.NVMLVersion = "12." + g.DriverVersion
	g.KernelModuleVersion = g.DriverVersion
	for d := range 8 {
		dev := facts.GPUDevice{
			Index: d, Name: "NVIDIA H100 80GB HBM3",
			UUID:            fmt.Sprintf("GPU-%08x-%04x-%04x-%04x-%012x", host*8+d, host%65536, d, image, host*131+d),
			PCIBusID:        fmt.Sprintf("00000000:%02X:00.0", 0x18+d*0x10),
			ECC:             &facts.ECC{Current: true, Pending: true},
			RetiredPages:    &facts.RetiredPages{},
			RemappedRows:    &facts.RemappedRows{},
			PersistenceMode: &on,
			MIG:             &facts.MIG{},
			TemperatureC:    temp(d),
			PCIe:            &facts.PCIe{GenCurrent: 5, GenMax: 5, WidthCurrent: 16, WidthMax: 16},
			Architecture:    "hopper", MinDriverBranch: 525,
		}
		// An H100 SXM has 18 NVLinks; one host in 61 has one down.
		for l := range 18 {
			dev.NVLink = append(dev.NVLink, facts.NVLink{Link: l, Active: !(host%61 == 7 && d == 4 && l == 9)})
		}
		switch {
		case host%50 == 3 && d == 2:
			dev.ECC.UncorrectedAggregate = 2
			dev.RemappedRows.Uncorrectable = 1
		case host%37 == 5 && d == 6:
			dev.RemappedRows.Correctable = 3
			dev.RetiredPages.Count = 1
		}
		g.Devices = append(g.Devices, dev)
	}
	if host%100 == 42 {
		g.XIDEvents = []facts.XIDEvent{{Code: 79, PCIBusID: "0000:38:00.0",
			Time: "2025-03-01T11:00:00Z", Message: "GPU has fallen off the bus.",
			GPUs: []facts.XIDGPU{{Index: 2, UUID: g.Devices[2].UUID}}}}
	}
	return g
}

// mix scatters n (SplitMix64's finaliser).
func mix(n uint64) uint64 {
	n += 0x9e3779b97f4a7c15
	n = (n ^ n>>30) * 0xbf58476d1ce4e5b9
	n = (n ^ n>>27) * 0x94d049bb133111eb
	return n ^ n>>31
}

// hostNetwork is the image's listeners, each with this host's PID.
func hostNetwork(base *facts.Network, host int) *facts.Network {
	n := &facts.Network{}
	if base != nil {
		*n = *base
	}
	n.Listening = append([]facts.Listener{}, n.Listening...)
	n.Listening = append(n.Listening,
		facts.Listener{Proto: "tcp", Address: "0.0.0.0", Port: 22, Process: "sshd", PID: 700 + host%300},
		facts.Listener{Proto: "tcp", Address: "127.0.0.1", Port: 9400, Process: "dcgm-exporter", PID: 2000 + host%5000})
	for i := range n.Listening {
		n.Listening[i].PID = 600 + (host*13+i*7)%30000
	}
	return n
}

// fleetParams is what a fleet of eight-GPU hosts is scanned with, so that
// the count and MIG checks run too.
const fleetParams = "gpu_expected_count: 8\ngpu_mig: false\n"

// writeFleetParams writes fleetParams to file.
func writeFleetParams(file string) error { return os.WriteFile(file, []byte(fleetParams), 0o600) }

// writeRealisticFleet writes n realistic hosts of the target at dir to file,
// and the params to scan them with to file.params.yaml.
func writeRealisticFleet(gpuhost, dir string, n int, file string) error {
	doc, err := exec.Command(gpuhost, "facts", "rootfs", dir).Output()
	if err != nil {
		return fmt.Errorf("gpuhost facts rootfs %s: %w", dir, err)
	}
	ndjson, err := realisticFleet(doc, n)
	if err != nil {
		return err
	}
	if err := os.WriteFile(file, ndjson, 0o600); err != nil {
		return err
	}
	return writeFleetParams(file + ".params.yaml")
}
