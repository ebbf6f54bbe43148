package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/diskfs/go-diskfs"
	"github.com/diskfs/go-diskfs/partition/gpt"
)

// The hostile soak: one target per attack the scan budget must hold
// against, each run through the gpuhost command a user runs on it, under
// GNU time. Every one must end with exit 2 (the scan could not be
// trusted), or 1 where the attack only fails checks, never 0 or a crash,
// within hostileBudget and hostileRSS.

const (
	hostileBudget = 90 * time.Second
	hostileRSS    = 1536 << 20 // the 1 GiB heap ceiling, plus the runtime and the mapped binary
)

// hostileCase is one crafted target and the command that meets it.
type hostileCase struct {
	name, what string
	args       []string
	exits      []int
}

func measureHostileSoak(gpuhost, sample, tmp string) error {
	cases, err := hostileCases(sample, filepath.Join(tmp, "hostile"))
	if err != nil {
		return err
	}
	fmt.Println("\nhostile soak: each attack through the command a user runs on it (exit, wall, peak RSS)")
	fmt.Printf("%-22s %5s %9s %9s  %s\n", "case", "exit", "wall", "peak RSS", "what")
	var failed []string
	var slowest time.Duration
	var peak int64
	for _, c := range cases {
		r, runErr := timed("", false, gpuhost, c.args...)
		code := 0
		if runErr != nil {
			code = exitCode(runErr)
		}
		slowest, peak = max(slowest, r.wall), max(peak, r.rss)
		fmt.Printf("%-22s %5d %9s %6d MiB  %s\n", c.name, code, r.wall.Round(10*time.Millisecond), r.rss>>10, c.what)
		switch {
		case !slices.Contains(c.exits, code):
			failed = append(failed, fmt.Sprintf("%s: exit %d, want one of %v: %s", c.name, code, c.exits, lastLine(string(r.stderr))))
		case r.wall > hostileBudget:
			failed = append(failed, fmt.Sprintf("%s: took %s, over %s", c.name, r.wall, hostileBudget))
		case r.rss<<10 > hostileRSS:
			failed = append(failed, fmt.Sprintf("%s: peak RSS %d MiB, over %d MiB", c.name, r.rss>>10, hostileRSS>>20))
		}
	}
	fmt.Printf("slowest case %s (budget %s), peak RSS %d MiB (limit %d MiB)\n", slowest.Round(10*time.Millisecond), hostileBudget, peak>>10, hostileRSS>>20)
	if len(failed) > 0 {
		return fmt.Errorf("hostile soak:\n  %s", strings.Join(failed, "\n  "))
	}
	return nil
}

// hostileCases writes the targets under dir.
func hostileCases(sample, dir string) ([]hostileCase, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var cases []hostileCase
	for _, tc := range []struct {
		name, what string
		keys       []int
	}{
		{"toml-imports", "two containerd conf.d imports of 49k keys each, under the 100k bound on a configuration with its imports: decoded whole", []int{49_000, 49_000}},
		{"toml-too-many-keys", "a 2 MiB containerd conf.d import of 220k keys, over the bound", []int{220_000}},
	} {
		toml, err := tomlImportsTree(sample, filepath.Join(dir, tc.name), tc.keys)
		if err != nil {
			return nil, err
		}
		cases = append(cases, hostileCase{name: tc.name, what: tc.what, args: []string{"scan", "rootfs", toml, "--format", "json"}, exits: []int{1, 2}})
	}
	disk, tree, err := argonSlotsDisk(filepath.Join(dir, "luks"))
	if err != nil {
		return nil, err
	}
	cases = append(cases, hostileCase{name: "luks-argon-slots", what: "a LUKS2 root made by cryptsetup, its header edited to 32 argon2id slots of 512 MiB and 4 passes each",
		args: []string{"scan", "image", disk, "--rootfs", tree, "--format", "json"}, exits: []int{1, 2}})
	lock, err := newlineManifest(filepath.Join(dir, "lock"))
	if err != nil {
		return nil, err
	}
	cases = append(cases, hostileCase{name: "lock-newline", what: "a manifest whose package version carries a newline and a forged mirror record",
		args: []string{"lock", "--from", lock, "-o", filepath.Join(dir, "lock", "out.lock")}, exits: []int{2}})
	return cases, nil
}

// tomlImportsTree is the sample tree whose containerd config imports
// conf.d files of many keys: the decoder must stay linear in them.
func tomlImportsTree(sample, tree string, keys []int) (string, error) {
	if err := os.CopyFS(tree, os.DirFS(sample)); err != nil {
		return "", err
	}
	confd := filepath.Join(tree, "etc/containerd/conf.d")
	if err := os.MkdirAll(confd, 0o755); err != nil {
		return "", err
	}
	cfg := "version = 2\nimports = [\"/etc/containerd/conf.d/*.toml\"]\n"
	if err := os.WriteFile(filepath.Join(tree, "etc/containerd/config.toml"), []byte(cfg), 0o644); err != nil {
		return "", err
	}
	for i, n := range keys {
		var b bytes.Buffer
		b.WriteString("[plugins.\"io.containerd.grpc.v1.cri\".registry.headers]\n")
		for k := range n {
			fmt.Fprintf(&b, "k%d = \"v\"\n", k)
		}
		if err := os.WriteFile(filepath.Join(confd, fmt.Sprintf("%02d.toml", i)), b.Bytes(), 0o644); err != nil {
			return "", err
		}
	}
	return tree, nil
}

// newlineManifest is a baked manifest whose one package's version
// smuggles a second line into any line-oriented record written from it.
func newlineManifest(dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	m := map[string]any{
		"schema":       "gpuhost.manifest/v1",
		"pins":         map[string]any{"packages": []any{}, "ngc_images": []any{}},
		"packages":     []any{map[string]any{"name": "openssl", "version": "3.0.15-1~deb12u1\nmirror http://127.0.0.1:1/evil", "arch": "amd64"}},
		"config_files": []any{},
		"build":        map[string]any{"template": "hostile"},
	}
	data, err := json.Marshal(m)
	if err != nil {
		return "", err
	}
	file := filepath.Join(dir, "manifest.json")
	return file, os.WriteFile(file, data, 0o644)
}

// argonSlotsDisk is a GPT disk whose root partition is a LUKS2 volume
// cryptsetup formatted, its header then edited to slots that each ask for
// the per-slot limit, and the tree whose crypttab opens it.
func argonSlotsDisk(dir string) (disk, tree string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", err
	}
	vol, key := filepath.Join(dir, "root.luks"), filepath.Join(dir, "key")
	if err := os.WriteFile(key, []byte(strings.Repeat("k", 64)), 0o600); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(vol, make([]byte, 20<<20), 0o600); err != nil {
		return "", "", err
	}
	out, err := exec.Command("cryptsetup", "luksFormat", "--batch-mode", "--type", "luks2", "--pbkdf", "pbkdf2",
		"--pbkdf-force-iterations", "1000", "--key-file", key, vol).CombinedOutput()
	if err != nil {
		return "", "", fmt.Errorf("cryptsetup luksFormat: %v\n%s", err, out)
	}
	if err := editLUKS2Slots(vol, 32, 512<<10, 4); err != nil {
		return "", "", err
	}
	if out, err := exec.Command("cryptsetup", "luksDump", vol).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("cryptsetup luksDump of the edited header: %v\n%s", err, out)
	}
	uuid, err := exec.Command("cryptsetup", "luksUUID", vol).Output()
	if err != nil {
		return "", "", fmt.Errorf("cryptsetup luksUUID: %v", err)
	}
	id := strings.TrimSpace(string(uuid))
	tree = filepath.Join(dir, "tree")
	for name, body := range map[string]string{
		"etc/os-release": "ID=debian\nVERSION_ID=\"12\"\n",
		"etc/fstab":      "/dev/mapper/luks-" + id + " / ext4 errors=remount-ro 0 1\n",
		"etc/crypttab":   "luks-" + id + " UUID=" + id + " none luks,discard\n",
	} {
		if err := os.MkdirAll(filepath.Join(tree, filepath.Dir(name)), 0o755); err != nil {
			return "", "", err
		}
		if err := os.WriteFile(filepath.Join(tree, name), []byte(body), 0o644); err != nil {
			return "", "", err
		}
	}
	disk = filepath.Join(dir, "disk.raw")
	return disk, tree, rootOnLUKSDisk(disk, vol)
}

// rootOnLUKSDisk writes a GPT disk whose one partition, typed as an
// x86-64 root, holds vol.
func rootOnLUKSDisk(disk, vol string) error {
	st, err := os.Stat(vol)
	if err != nil {
		return err
	}
	sectors := uint64(st.Size() / 512)
	d, err := diskfs.Create(disk, int64(2048+sectors+2048)*512, diskfs.SectorSizeDefault)
	if err != nil {
		return err
	}
	defer d.Close()
	table := &gpt.Table{LogicalSectorSize: 512, PhysicalSectorSize: 512, ProtectiveMBR: true, Partitions: []*gpt.Partition{
		{Index: 1, Start: 2048, End: 2048 + sectors - 1, Type: gpt.Type("4F68BCE3-E8CD-4DB1-96E7-FBCAF984B709"), Name: "root"},
	}}
	if err := d.Partition(table); err != nil {
		return err
	}
	f, err := os.Open(vol)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = d.WritePartitionContents(1, f)
	return err
}

// editLUKS2Slots rewrites both LUKS2 headers of vol with n argon2id
// keyslots copied from slot 0, each asking for memoryKiB over passes, all
// covered by the digest, and the checksums made good again, so the header
// is one cryptsetup itself accepts.
func editLUKS2Slots(vol string, n int, memoryKiB, passes uint64) error {
	data, err := os.ReadFile(vol)
	if err != nil {
		return err
	}
	if !bytes.HasPrefix(data, []byte("LUKS\xba\xbe")) {
		return fmt.Errorf("%s: not a LUKS header", vol)
	}
	hdrSize := binary.BigEndian.Uint64(data[8:16])
	if hdrSize < 4096*2 || hdrSize*2 > uint64(len(data)) {
		return fmt.Errorf("%s: header size %d", vol, hdrSize)
	}
	var meta map[string]any
	if err := json.Unmarshal(bytes.TrimRight(data[4096:hdrSize], "\x00"), &meta); err != nil {
		return fmt.Errorf("%s: LUKS2 JSON: %w", vol, err)
	}
	slots, _ := meta["keyslots"].(map[string]any)
	first, _ := slots["0"].(map[string]any)
	if first == nil {
		return fmt.Errorf("%s: no keyslot 0", vol)
	}
	area, _ := first["area"].(map[string]any)
	offset, err1 := jsonUint(area["offset"])
	size, err2 := jsonUint(area["size"])
	if err1 != nil || err2 != nil {
		return fmt.Errorf("%s: keyslot 0's area: %v %v", vol, err1, err2)
	}
	var ids []string
	for i := range n {
		// Each slot gets its own key material area, as cryptsetup lays
		// them out: it refuses a header whose areas overlap.
		slot := map[string]any{}
		for k, v := range first {
			slot[k] = v
		}
		a := map[string]any{}
		for k, v := range area {
			a[k] = v
		}
		a["offset"] = fmt.Sprint(offset + uint64(i)*size)
		slot["area"] = a
		slot["kdf"] = map[string]any{"type": "argon2id", "time": passes, "memory": memoryKiB, "cpus": 1, "salt": "c2FsdHNhbHRzYWx0c2FsdA=="}
		slots[fmt.Sprint(i)] = slot
		ids = append(ids, fmt.Sprint(i))
	}
	for _, d := range meta["digests"].(map[string]any) {
		d.(map[string]any)["keyslots"] = ids
	}
	js, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	if uint64(len(js)) > hdrSize-4096 {
		return fmt.Errorf("%s: %d slots do not fit the JSON area", vol, n)
	}
	for _, at := range []uint64{0, hdrSize} {
		h := data[at : at+hdrSize]
		clear(h[4096:])
		copy(h[4096:], js)
		clear(h[448 : 448+64])
		sum := sha256.Sum256(h)
		copy(h[448:], sum[:])
	}
	return os.WriteFile(vol, data, 0o600)
}

// jsonUint reads a LUKS2 JSON number, which the format writes as a string.
func jsonUint(v any) (uint64, error) {
	s, ok := v.(string)
	if !ok {
		return 0, fmt.Errorf("%v is not a string", v)
	}
	var n uint64
	_, err := fmt.Sscan(s, &n)
	return n, err
}
