package runtime

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/textfile"
)

// CRI plugin tables by config version. Version 1 named the plugin "cri";
// version 3 (containerd 2.x) split the runtime settings into their own plugin.
const (
	criPluginV1      = "cri"
	criPluginV2      = "io.containerd.grpc.v1.cri"
	criRuntimePlugin = "io.containerd.cri.v1.runtime"
)

// maxTOMLDepth bounds table nesting in the merge, where recursion follows
// the input.
const maxTOMLDepth = 64

// MaxContainerdValues bounds the key parts and array elements of one
// containerd configuration, its imports together (see tomlDoc.Count): their
// trees are held and merged whole, and 256 imports of 2 MiB could otherwise
// hold tens of millions. A generated default configuration holds a few
// hundred.
const MaxContainerdValues = 100_000

// ContainerdFile is one decoded containerd configuration file.
type ContainerdFile struct {
	// Name is the root-relative path; Display the path shown to users.
	Name, Display string
	Version       int
	Imports       []string
	Tree          map[string]any
	// Lines is Tree's line tree: where each setting is written (see
	// decodeTOML).
	Lines map[string]any
	// Values counts Tree's key parts and array elements.
	Values int
}

// DecodeContainerdTOML decodes one containerd config file, refusing one of
// more than MaxContainerdValues values. display names the file in errors.
func DecodeContainerdTOML(display string, data []byte) (*ContainerdFile, error) {
	return decodeContainerd(display, data, 0)
}

// decodeContainerd decodes a file merged with others holding held values.
func decodeContainerd(display string, data []byte, held int) (*ContainerdFile, error) {
	doc, err := decodeTOML(display, data, held, MaxContainerdValues)
	if err != nil {
		return nil, err
	}
	tree := doc.Values
	f := &ContainerdFile{Display: display, Version: 1, Tree: tree, Lines: doc.Lines, Values: doc.Count}
	if v, ok := tree["version"]; ok {
		n, ok := v.(int64)
		if !ok || n < 1 || n > 3 {
			return nil, fmt.Errorf("parsing %s: version must be 1, 2 or 3, not %v", display, v)
		}
		f.Version = int(n)
	}
	if v, ok := tree["imports"]; ok {
		list, ok := v.([]any)
		if !ok {
			return nil, fmt.Errorf("parsing %s: imports must be an array of strings", display)
		}
		for _, item := range list {
			s, ok := item.(string)
			if !ok {
				return nil, fmt.Errorf("parsing %s: imports must be an array of strings", display)
			}
			f.Imports = append(f.Imports, s)
		}
	}
	return f, nil
}

// MigrateContainerd moves the CRI settings of a file written for an older
// config version to where version target reads them, as containerd does when
// it loads a version 2 drop-in under a version 3 main file.
func MigrateContainerd(tree map[string]any, from, target int) {
	plugins, ok := tree["plugins"].(map[string]any)
	if !ok {
		return
	}
	if from == 1 {
		if cri, ok := plugins[criPluginV1]; ok {
			if _, exists := plugins[criPluginV2]; !exists {
				plugins[criPluginV2] = cri
			}
			delete(plugins, criPluginV1)
		}
	}
	if target < 3 || from >= 3 {
		return
	}
	cri, ok := plugins[criPluginV2].(map[string]any)
	if !ok {
		return
	}
	rt, ok := plugins[criRuntimePlugin].(map[string]any)
	if !ok {
		rt = map[string]any{}
		plugins[criRuntimePlugin] = rt
	}
	for _, k := range []string{"containerd", "enable_cdi", "cdi_spec_dirs"} {
		if v, ok := cri[k]; ok {
			rt[k] = v
			delete(cri, k)
		}
	}
}

// MergeTOML merges src into dst: tables merge recursively and any other value
// in src replaces dst's.
func MergeTOML(dst, src map[string]any) error {
	return mergeTOML(dst, src, 0)
}

func mergeTOML(dst, src map[string]any, depth int) error {
	if depth > maxTOMLDepth {
		return fmt.Errorf("tables nested deeper than %d", maxTOMLDepth)
	}
	for k, v := range src {
		sv, sok := v.(map[string]any)
		dv, dok := dst[k].(map[string]any)
		if sok && dok {
			if err := mergeTOML(dv, sv, depth+1); err != nil {
				return err
			}
			continue
		}
		dst[k] = v
	}
	return nil
}

// ContainerdSettings is what the CRI plugin of a merged config says.
type ContainerdSettings struct {
	DefaultRuntime string
	Runtimes       []string
	NvidiaRuntime  bool
	// NvidiaName is the runtime NvidiaRuntime found.
	NvidiaName          string
	NvidiaBinary        string
	SystemdCgroup       *bool
	NvidiaSystemdCgroup *bool
	CDIEnabled          bool
}

// ExtractContainerd reads the CRI runtime settings from a merged tree of the
// given config version. A value of the wrong type is an error: containerd
// itself would refuse it.
func ExtractContainerd(tree map[string]any, version int) (*ContainerdSettings, error) {
	plugin := criPluginV2
	// containerd 2.x (config version 3) enables CDI unless told otherwise;
	// 1.x did not.
	cdiDefault := false
	if version >= 3 {
		plugin = criRuntimePlugin
		cdiDefault = true
	}
	s := &ContainerdSettings{DefaultRuntime: "runc", CDIEnabled: cdiDefault, Runtimes: []string{}}
	cri, err := table(tree, "plugins", plugin)
	if err != nil || cri == nil {
		return s, err
	}
	if v, ok := cri["enable_cdi"]; ok {
		b, ok := v.(bool)
		if !ok {
			return nil, fmt.Errorf("plugins.%q.enable_cdi must be a boolean", plugin)
		}
		s.CDIEnabled = b
	}
	ctd, err := table(cri, "containerd")
	if err != nil || ctd == nil {
		return s, prefixErr(plugin, err)
	}
	if v, ok := ctd["default_runtime_name"]; ok {
		name, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("plugins.%q.containerd.default_runtime_name must be a string", plugin)
		}
		if name != "" {
			s.DefaultRuntime = name
		}
	}
	runtimes, err := table(ctd, "runtimes")
	if err != nil {
		return nil, prefixErr(plugin, err)
	}
	names := make([]string, 0, len(runtimes))
	for name := range runtimes {
		names = append(names, name)
	}
	slices.Sort(names)
	s.Runtimes = names
	nvidia := ""
	for _, name := range names {
		rt, err := table(runtimes, name)
		if err != nil {
			return nil, fmt.Errorf("plugins.%q.containerd.runtimes: %w", plugin, err)
		}
		opts, err := table(rt, "options")
		if err != nil {
			return nil, fmt.Errorf("plugins.%q.containerd.runtimes.%s: %w", plugin, name, err)
		}
		binary, err := optString(opts, "BinaryName")
		if err != nil {
			return nil, fmt.Errorf("plugins.%q.containerd.runtimes.%s.options: %w", plugin, name, err)
		}
		cgroup, err := optBool(opts, "SystemdCgroup")
		if err != nil {
			return nil, fmt.Errorf("plugins.%q.containerd.runtimes.%s.options: %w", plugin, name, err)
		}
		if name == s.DefaultRuntime {
			s.SystemdCgroup = cgroup
		}
		isNvidia := name == "nvidia" || strings.HasSuffix(binary, "nvidia-container-runtime")
		// A runtime named "nvidia" is the one nvidia-ctk writes; prefer it
		// over others that merely run the same binary.
		if isNvidia && (nvidia == "" || name == "nvidia") {
			nvidia = name
			s.NvidiaRuntime, s.NvidiaName = true, name
			s.NvidiaBinary = binary
			s.NvidiaSystemdCgroup = cgroup
		}
	}
	return s, nil
}

func prefixErr(plugin string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("plugins.%q: %w", plugin, err)
}

// table walks keys from m; a missing table is nil, a non-table an error.
func table(m map[string]any, keys ...string) (map[string]any, error) {
	cur := m
	for _, k := range keys {
		if cur == nil {
			return nil, nil
		}
		v, ok := cur[k]
		if !ok {
			return nil, nil
		}
		t, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s must be a table", k)
		}
		cur = t
	}
	return cur, nil
}

func optString(m map[string]any, k string) (string, error) {
	v, ok := m[k]
	if !ok {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s must be a string", k)
	}
	return s, nil
}

func optBool(m map[string]any, k string) (*bool, error) {
	v, ok := m[k]
	if !ok {
		return nil, nil
	}
	b, ok := v.(bool)
	if !ok {
		return nil, fmt.Errorf("%s must be a boolean", k)
	}
	return &b, nil
}

// LoadContainerd reads the main config and every file its imports name,
// breadth first and each once, as containerd does, merging each over the
// ones before. It returns the facts and the files merged.
func LoadContainerd(src textfile.Source, name string) (*facts.Containerd, error) {
	data, err := textfile.ReadText(src, name)
	if err != nil {
		return nil, err
	}
	main, err := DecodeContainerdTOML(src.Display(name), data)
	if err != nil {
		return nil, err
	}
	main.Name = path.Clean("/" + name)
	version := max(main.Version, 2)
	// lines has the merged tree's shape, with where each value was set.
	merged, lines := map[string]any{}, map[string]any{}
	MigrateContainerd(main.Tree, main.Version, version)
	MigrateContainerd(main.Lines, main.Version, version)
	if err := MergeTOML(merged, main.Tree); err != nil {
		return nil, fmt.Errorf("merging %s: %w", main.Display, err)
	}
	if err := MergeTOML(lines, main.Lines); err != nil {
		return nil, fmt.Errorf("merging %s: %w", main.Display, err)
	}
	m := &containerdMerge{src: src, version: version, merged: merged, lines: lines,
		held: main.Values, imports: []string{}, loaded: map[string]bool{main.Name: true}}
	queue := []*ContainerdFile{main}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, pat := range cur.Imports {
			files, err := textfile.GlobSorted(src, path.Dir(cur.Name), pat)
			if err != nil {
				return nil, fmt.Errorf("parsing %s: imports: %w", cur.Display, err)
			}
			for _, f := range files {
				if m.loaded[f] {
					continue
				}
				imp, err := m.mergeImport(cur, f)
				if err != nil {
					return nil, err
				}
				queue = append(queue, imp)
			}
		}
	}
	imports := m.imports
	s, err := ExtractContainerd(merged, version)
	if err != nil {
		if len(imports) > 0 {
			return nil, fmt.Errorf("parsing %s with its imports: %w", main.Display, err)
		}
		return nil, fmt.Errorf("parsing %s: %w", main.Display, err)
	}
	return &facts.Containerd{
		ConfigPath:          main.Display,
		ConfigVersion:       main.Version,
		Imports:             imports,
		NvidiaRuntime:       s.NvidiaRuntime,
		NvidiaBinary:        s.NvidiaBinary,
		NvidiaBinaryPresent: s.NvidiaBinary != "" && executableIn(src, s.NvidiaBinary),
		DefaultRuntime:      s.DefaultRuntime,
		SystemdCgroup:       s.SystemdCgroup,
		NvidiaSystemdCgroup: s.NvidiaSystemdCgroup,
		CDIEnabled:          s.CDIEnabled,
		Locations:           containerdLocations(lines, version, s),
	}, nil
}

// containerdMerge is what LoadContainerd carries from one import to the
// next: the trees merged so far, the values read so far (the bound on them
// is shared by every file, so many imports cannot exceed it together), and
// the files already loaded, so each is read once.
type containerdMerge struct {
	src           textfile.Source
	version       int
	merged, lines map[string]any
	held          int
	imports       []string
	loaded        map[string]bool
}

// mergeImport reads the file f that cur imports and merges it over what is
// merged so far, migrated to the main file's version. It returns the file,
// whose own imports are read in turn.
func (m *containerdMerge) mergeImport(cur *ContainerdFile, f string) (*ContainerdFile, error) {
	if len(m.loaded) >= textfile.MaxIncludeFiles {
		return nil, fmt.Errorf("parsing %s: imports more than %d files", cur.Display, textfile.MaxIncludeFiles)
	}
	m.loaded[f] = true
	data, err := textfile.ReadText(m.src, f)
	if err != nil {
		return nil, fmt.Errorf("%s: import: %w", cur.Display, err)
	}
	imp, err := decodeContainerd(m.src.Display(f), data, m.held)
	if err != nil {
		return nil, err
	}
	imp.Name = f
	m.held += imp.Values
	for _, tree := range []map[string]any{imp.Tree, imp.Lines} {
		MigrateContainerd(tree, imp.Version, m.version)
		// An import's own version and imports do not override the
		// main file's.
		delete(tree, "version")
		delete(tree, "imports")
	}
	if err := MergeTOML(m.merged, imp.Tree); err != nil {
		return nil, fmt.Errorf("merging %s: %w", imp.Display, err)
	}
	if err := MergeTOML(m.lines, imp.Lines); err != nil {
		return nil, fmt.Errorf("merging %s: %w", imp.Display, err)
	}
	m.imports = append(m.imports, imp.Display)
	return imp, nil
}

// containerdLocations says where the merged settings s were set, from the
// line tree of the files merged: the paths ExtractContainerd reads, each
// falling back to the table around it.
func containerdLocations(lines map[string]any, version int, s *ContainerdSettings) map[string]collect.FileLine {
	plugin := criPluginV2
	if version >= 3 {
		plugin = criRuntimePlugin
	}
	key := func(keys ...string) []string { return append([]string{"plugins", plugin}, keys...) }
	runtime := func(name string, keys ...string) []string {
		return key(append([]string{"containerd", "runtimes", name}, keys...)...)
	}
	out := map[string]collect.FileLine{}
	put := func(setting string, paths ...[]string) {
		for _, p := range paths {
			if l, ok := lineOf(lines, p...); ok {
				out[setting] = l
				return
			}
		}
	}
	put("default_runtime", key("containerd", "default_runtime_name"))
	put("cdi_enabled", key("enable_cdi"))
	put("systemd_cgroup", runtime(s.DefaultRuntime, "options", "SystemdCgroup"), runtime(s.DefaultRuntime, "options"), runtime(s.DefaultRuntime))
	if s.NvidiaRuntime {
		n := s.NvidiaName
		put("nvidia_runtime", runtime(n))
		put("nvidia_binary", runtime(n, "options", "BinaryName"), runtime(n, "options"), runtime(n))
		put("nvidia_systemd_cgroup", runtime(n, "options", "SystemdCgroup"), runtime(n, "options"), runtime(n))
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// binaryPath is where the runc shim finds a BinaryName that is not a path:
// the PATH containerd's systemd unit runs with.
var binaryPath = []string{"/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin"}

// executableIn reports whether name (a path, or a command looked up on
// binaryPath) is an executable regular file inside the target: a runtime
// configured in containerd whose binary is missing starts no container.
func executableIn(src textfile.Source, name string) bool {
	candidates := []string{name}
	if !strings.Contains(name, "/") {
		candidates = candidates[:0]
		for _, dir := range binaryPath {
			candidates = append(candidates, path.Join(dir, name))
		}
	}
	for _, c := range candidates {
		if st, err := src.Stat(c); err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0 {
			return true
		}
	}
	return false
}
