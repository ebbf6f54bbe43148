package runtime

import (
	"bytes"
	"encoding/json"
	"encoding/json/jsontext"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/gpuhost/gpuhost/facts"
	"github.com/gpuhost/gpuhost/facts/collect"
	"github.com/gpuhost/gpuhost/facts/collect/textfile"
	"github.com/gpuhost/gpuhost/internal/boundedyaml"
)

// ParseDockerDaemon parses /etc/docker/daemon.json. display names the file in
// errors and becomes ConfigPath. An unset default runtime is "runc"; an unset
// cgroup driver stays empty, because dockerd picks it from the cgroup version.
func ParseDockerDaemon(display string, data []byte) (*facts.Docker, error) {
	doc, err := decodeDaemonJSON(display, data)
	if err != nil {
		return nil, err
	}
	d := &facts.Docker{ConfigPath: display, DefaultRuntime: "runc", Runtimes: []string{}}
	if err := readDockerSettings(display, doc, d); err != nil {
		return nil, err
	}
	locations, err := dockerLocations(display, data)
	if err != nil {
		return nil, err
	}
	if len(locations) > 0 {
		d.Locations = locations
	}
	return d, nil
}

// decodeDaemonJSON decodes the file as one JSON object and nothing after
// it, as dockerd requires, naming the line of a syntax or type error so the
// operator can find it.
func decodeDaemonJSON(display string, data []byte) (map[string]any, error) {
	var doc map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&doc); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			return nil, fmt.Errorf("parsing %s:%d: %w", display, textfile.LineOf(data, int(se.Offset)), err)
		case errors.As(err, &te):
			return nil, fmt.Errorf("parsing %s:%d: %w", display, textfile.LineOf(data, int(te.Offset)), err)
		}
		return nil, fmt.Errorf("parsing %s: %w", display, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("parsing %s: data after the JSON object", display)
	}
	if doc == nil {
		return nil, fmt.Errorf("parsing %s: not a JSON object", display)
	}
	return doc, nil
}

// readDockerSettings picks out the few settings the checks judge. A known
// key of the wrong type is an error rather than ignored, since dockerd
// would refuse to start with it and the facts would describe a daemon
// that does not run.
func readDockerSettings(display string, doc map[string]any, d *facts.Docker) error {
	bad := func(key, want string) error {
		return fmt.Errorf("parsing %s: %q must be %s", display, key, want)
	}
	if v, ok := doc["default-runtime"]; ok {
		s, ok := v.(string)
		if !ok {
			return bad("default-runtime", "a string")
		}
		if s != "" {
			d.DefaultRuntime = s
		}
	}
	if v, ok := doc["runtimes"]; ok {
		m, ok := v.(map[string]any)
		if !ok {
			return bad("runtimes", "an object")
		}
		for k := range m {
			d.Runtimes = append(d.Runtimes, k)
		}
		slices.Sort(d.Runtimes)
	}
	if v, ok := doc["exec-opts"]; ok {
		list, ok := v.([]any)
		if !ok {
			return bad("exec-opts", "an array of strings")
		}
		for _, item := range list {
			s, ok := item.(string)
			if !ok {
				return bad("exec-opts", "an array of strings")
			}
			k, val, found := strings.Cut(s, "=")
			if found && strings.EqualFold(strings.TrimSpace(k), "native.cgroupdriver") {
				d.CgroupDriver = strings.TrimSpace(val)
			}
		}
	}
	if v, ok := doc["features"]; ok {
		m, ok := v.(map[string]any)
		if !ok {
			return bad("features", "an object")
		}
		if c, ok := m["cdi"]; ok {
			b, ok := c.(bool)
			if !ok {
				return bad("features.cdi", "a boolean")
			}
			d.CDIEnabled = b
		}
	}
	return nil
}

// dockerLocations places the settings ParseDockerDaemon reads on their
// lines, by their facts names; encoding/json keeps no positions, so a
// second pass walks the tokens. A key given twice counts where its last
// value is, as encoding/json keeps that one.
func dockerLocations(display string, data []byte) (map[string]collect.FileLine, error) {
	dec := jsontext.NewDecoder(bytes.NewReader(data), jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true))
	loc := map[string]collect.FileLine{}
	visit := func(path []string, tok jsontext.Token) {
		// A token ends on the line it starts on: strings hold no raw
		// newline, and a bracket is one byte.
		here := func() collect.FileLine {
			return collect.FileLine{File: display, Line: textfile.LineOf(data, int(dec.InputOffset())-1)}
		}
		switch {
		case len(path) == 1 && path[0] == "default-runtime":
			loc["default_runtime"] = here()
		case len(path) == 1 && path[0] == "runtimes":
			loc["runtimes"] = here()
		case len(path) == 1 && path[0] == "exec-opts":
			// A repeated exec-opts replaces the earlier list whole.
			delete(loc, "cgroup_driver")
		case len(path) == 2 && path[0] == "exec-opts" && tok.Kind() == '"':
			if k, _, ok := strings.Cut(tok.String(), "="); ok && strings.EqualFold(strings.TrimSpace(k), "native.cgroupdriver") {
				loc["cgroup_driver"] = here()
			}
		case len(path) == 1 && path[0] == "features":
			delete(loc, "cdi_enabled")
		case len(path) == 2 && path[0] == "features" && path[1] == "cdi":
			loc["cdi_enabled"] = here()
		}
	}
	if err := walkJSON(dec, nil, visit); err != nil {
		return nil, fmt.Errorf("locating settings in %s: %w", display, err)
	}
	return loc, nil
}

// walkJSON reads one value from dec, calling visit with the path of names
// and array indexes to each value as its first token is read.
func walkJSON(dec *jsontext.Decoder, path []string, visit func([]string, jsontext.Token)) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	visit(path, tok)
	switch tok.Kind() {
	case '{':
		for dec.PeekKind() == '"' {
			name, err := dec.ReadToken()
			if err != nil {
				return err
			}
			if err := walkJSON(dec, append(path, name.String()), visit); err != nil {
				return err
			}
		}
	case '[':
		// PeekKind is 0 on a syntax error, which the read after the loop
		// then returns.
		for i := 0; dec.PeekKind() != ']' && dec.PeekKind() != 0; i++ {
			if err := walkJSON(dec, append(path, strconv.Itoa(i)), visit); err != nil {
				return err
			}
		}
	default:
		return nil
	}
	_, err = dec.ReadToken()
	return err
}

// cdiDoc is the part of a CDI spec we report.
type cdiDoc struct {
	Kind    string `yaml:"kind"`
	Devices []struct {
		Name string `yaml:"name"`
	} `yaml:"devices"`
}

// ParseCDISpec parses one CDI spec (YAML or JSON). display names the file in
// errors and becomes File. Aliases are refused: CDI specs have no use for
// them, and expanding them is how a small file becomes a huge one.
func ParseCDISpec(display string, data []byte) (*facts.CDISpec, error) {
	body, err := boundedyaml.Parse(display, data)
	if err != nil {
		return nil, fmt.Errorf("parsing %w", err)
	}
	if body == nil {
		return nil, fmt.Errorf("parsing %s: want exactly one YAML document", display)
	}
	var alias *ast.AliasNode
	ast.Walk(visitFunc(func(n ast.Node) bool {
		if a, ok := n.(*ast.AliasNode); ok && alias == nil {
			alias = a
		}
		return alias == nil
	}), body)
	if alias != nil {
		line := 0
		if tk := alias.GetToken(); tk != nil && tk.Position != nil {
			line = tk.Position.Line
		}
		return nil, fmt.Errorf("parsing %s:%d: YAML aliases are not allowed in a CDI spec", display, line)
	}
	var doc cdiDoc
	if err := boundedyaml.Value(display, body, &doc); err != nil {
		return nil, fmt.Errorf("parsing %w", err)
	}
	spec := &facts.CDISpec{File: display, Kind: doc.Kind, Devices: []string{}}
	for _, dev := range doc.Devices {
		spec.Devices = append(spec.Devices, dev.Name)
	}
	return spec, nil
}

type visitFunc func(ast.Node) bool

func (f visitFunc) Visit(n ast.Node) ast.Visitor {
	if f(n) {
		return f
	}
	return nil
}
