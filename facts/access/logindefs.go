package access

import (
	"bufio"
	"bytes"
	"strings"

	"github.com/gpuhost/gpuhost/facts"
)

// maxLoginDefs bounds the keywords kept from login.defs: shadow knows some
// sixty, and a crafted file of many distinct words must not grow the maps
// without limit.
const maxLoginDefs = 512

// ParseLoginDefs reads login.defs(5): "KEYWORD value" lines, "#" comments
// and blank lines ignored, keywords upper-cased, and a keyword set twice
// taking its last value, as the shadow suite's getdef does. display names
// the file in the facts.
func ParseLoginDefs(display string, data []byte) *facts.LoginDefs {
	d := &facts.LoginDefs{File: display, Settings: map[string]string{}, Lines: map[string]int{}}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, _ := strings.Cut(strings.Join(strings.Fields(line), " "), " ")
		key = strings.ToUpper(key)
		if _, seen := d.Settings[key]; !seen && len(d.Settings) >= maxLoginDefs {
			continue
		}
		d.Settings[key] = strings.Trim(value, `"`)
		d.Lines[key] = n
	}
	return d
}
