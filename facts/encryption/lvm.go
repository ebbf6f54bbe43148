package encryption

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gpuhost/gpuhost/facts/collect/textfile"
)

const (
	// maxLVMDepth bounds the nesting of sections in LVM metadata.
	maxLVMDepth = 16
	// maxLVMItems bounds the sections and values of one metadata file.
	maxLVMItems = 1 << 16
)

// lvmVG is a volume group as its metadata backup describes it.
type lvmVG struct {
	Name string
	ID   string
	// PVs maps a physical volume's key (pv0) to its device hint and id.
	PVs map[string]lvmPV
	// LVs maps a logical volume's name to the keys of the PVs its segments
	// lie on.
	LVs map[string]lvmLV
}

type lvmPV struct {
	ID, Device string
}

type lvmLV struct {
	ID  string
	PVs []string
	// On names LVs this one is stacked on (thin pools, RAID images,
	// mirrors), which hold its data in turn.
	On []string
}

// lvmSection is one { } block of LVM's metadata text format.
type lvmSection struct {
	values   map[string][]string
	sections map[string]*lvmSection
	order    []string
}

func newLVMSection() *lvmSection {
	return &lvmSection{values: map[string][]string{}, sections: map[string]*lvmSection{}}
}

// lvmLexer splits LVM metadata text into words, strings and punctuation.
type lvmLexer struct {
	s    string
	i    int
	line int
}

type lvmToken struct {
	kind byte // 'w' word, 's' string, or the punctuation itself
	text string
}

func (l *lvmLexer) next() (lvmToken, error) {
	for l.i < len(l.s) {
		c := l.s[l.i]
		switch {
		case c == '\n':
			l.line++
			l.i++
		case c == ' ' || c == '\t' || c == '\r':
			l.i++
		case c == '#':
			for l.i < len(l.s) && l.s[l.i] != '\n' {
				l.i++
			}
		case c == '"':
			return l.str()
		case strings.IndexByte("{}[]=,", c) >= 0:
			l.i++
			return lvmToken{kind: c, text: string(c)}, nil
		case isLVMWord(c):
			start := l.i
			for l.i < len(l.s) && isLVMWord(l.s[l.i]) {
				l.i++
			}
			return lvmToken{kind: 'w', text: l.s[start:l.i]}, nil
		default:
			return lvmToken{}, fmt.Errorf("line %d: unexpected byte %q", l.line+1, c)
		}
	}
	return lvmToken{}, nil
}

func (l *lvmLexer) str() (lvmToken, error) {
	var b strings.Builder
	for l.i++; l.i < len(l.s); l.i++ {
		switch c := l.s[l.i]; c {
		case '"':
			l.i++
			return lvmToken{kind: 's', text: b.String()}, nil
		case '\\':
			if l.i+1 < len(l.s) {
				l.i++
				b.WriteByte(l.s[l.i])
			}
		case '\n':
			return lvmToken{}, fmt.Errorf("line %d: string runs past the end of the line", l.line+1)
		default:
			b.WriteByte(c)
		}
	}
	return lvmToken{}, fmt.Errorf("line %d: unterminated string", l.line+1)
}

func isLVMWord(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_-.+:", c) >= 0
}

// lvmParser reads the text format into nested sections.
type lvmParser struct {
	lex   lvmLexer
	items int
}

func (p *lvmParser) section(depth int, closing byte) (*lvmSection, error) {
	if depth > maxLVMDepth {
		return nil, fmt.Errorf("line %d: sections nested deeper than %d", p.lex.line+1, maxLVMDepth)
	}
	sec := newLVMSection()
	for {
		t, err := p.lex.next()
		if err != nil {
			return nil, err
		}
		if t.kind == closing {
			return sec, nil
		}
		if t.kind != 'w' {
			return nil, fmt.Errorf("line %d: want a name, got %q", p.lex.line+1, t.text)
		}
		if p.items++; p.items > maxLVMItems {
			return nil, fmt.Errorf("line %d: more than %d items", p.lex.line+1, maxLVMItems)
		}
		op, err := p.lex.next()
		if err != nil {
			return nil, err
		}
		switch op.kind {
		case '{':
			child, err := p.section(depth+1, '}')
			if err != nil {
				return nil, err
			}
			if _, dup := sec.sections[t.text]; !dup {
				sec.order = append(sec.order, t.text)
			}
			sec.sections[t.text] = child
		case '=':
			v, err := p.value()
			if err != nil {
				return nil, err
			}
			sec.values[t.text] = v
		default:
			return nil, fmt.Errorf("line %d: want { or = after %s", p.lex.line+1, t.text)
		}
	}
}

// value reads a scalar or a [ ] list, flattened to its elements.
func (p *lvmParser) value() ([]string, error) {
	t, err := p.lex.next()
	if err != nil {
		return nil, err
	}
	switch t.kind {
	case 's', 'w':
		return []string{t.text}, nil
	case '[':
		var out []string
		for {
			t, err := p.lex.next()
			if err != nil {
				return nil, err
			}
			switch t.kind {
			case ']':
				return out, nil
			case ',':
			case 's', 'w':
				if p.items++; p.items > maxLVMItems {
					return nil, fmt.Errorf("line %d: more than %d items", p.lex.line+1, maxLVMItems)
				}
				out = append(out, t.text)
			default:
				return nil, fmt.Errorf("line %d: unexpected %q in a list", p.lex.line+1, t.text)
			}
		}
	default:
		return nil, fmt.Errorf("line %d: want a value, got %q", p.lex.line+1, t.text)
	}
}

// parseLVMMetadata reads an LVM metadata backup (/etc/lvm/backup/<vg>):
// the one volume group it describes, its PVs and where each LV lies.
func parseLVMMetadata(data []byte) (lvmVG, error) {
	for i, l := range textfile.Lines(data) {
		if err := textfile.CheckLine([]byte(l)); err != nil {
			return lvmVG{}, fmt.Errorf("line %d: %w", i+1, err)
		}
	}
	p := &lvmParser{lex: lvmLexer{s: string(data)}}
	top, err := p.section(0, 0)
	if err != nil {
		return lvmVG{}, err
	}
	if len(top.order) != 1 {
		return lvmVG{}, fmt.Errorf("want one volume group, found %d", len(top.order))
	}
	name := top.order[0]
	vg := top.sections[name]
	out := lvmVG{Name: name, ID: first(vg.values["id"]), PVs: map[string]lvmPV{}, LVs: map[string]lvmLV{}}
	if pvs := vg.sections["physical_volumes"]; pvs != nil {
		for _, k := range pvs.order {
			pv := pvs.sections[k]
			out.PVs[k] = lvmPV{ID: first(pv.values["id"]), Device: first(pv.values["device"])}
		}
	}
	lvs := vg.sections["logical_volumes"]
	if lvs == nil {
		return out, nil
	}
	for _, k := range lvs.order {
		lv, err := lvmVolume(lvs.sections[k], out.PVs)
		if err != nil {
			return lvmVG{}, fmt.Errorf("logical volume %s: %w", k, err)
		}
		out.LVs[k] = lv
	}
	return out, nil
}

// lvmVolume reads an LV's segments: stripes name PVs with an extent, and
// other segment types name the sub-LVs that hold the data.
func lvmVolume(sec *lvmSection, pvs map[string]lvmPV) (lvmLV, error) {
	lv := lvmLV{ID: first(sec.values["id"])}
	for _, k := range sec.order {
		seg := sec.sections[k]
		if !strings.HasPrefix(k, "segment") {
			continue
		}
		// stripes alternate a PV and its first extent; mirrors and raids
		// list sub-LVs.
		for _, key := range []string{"stripes", "mirrors", "raids"} {
			for _, v := range seg.values[key] {
				if _, ok := pvs[v]; ok {
					lv.PVs = append(lv.PVs, v)
				} else if _, err := strconv.Atoi(v); err != nil {
					lv.On = append(lv.On, v)
				}
			}
		}
		for _, key := range []string{"thin_pool", "pool", "metadata", "origin"} {
			if v := first(seg.values[key]); v != "" {
				lv.On = append(lv.On, v)
			}
		}
	}
	if len(lv.PVs) == 0 && len(lv.On) == 0 {
		return lv, errors.New("no segment says where its data lies")
	}
	return lv, nil
}

func first(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[0]
}

// lvmDMName is the device-mapper name LVM gives vg/lv: each "-" in either
// doubled, the two joined by "-".
func lvmDMName(vg, lv string) string {
	return strings.ReplaceAll(vg, "-", "--") + "-" + strings.ReplaceAll(lv, "-", "--")
}

// splitLVMDMName undoes lvmDMName: the first "-" that is not doubled
// separates the VG from the LV.
func splitLVMDMName(name string) (vg, lv string, ok bool) {
	for i := 0; i < len(name); i++ {
		if name[i] != '-' {
			continue
		}
		if i+1 < len(name) && name[i+1] == '-' {
			i++
			continue
		}
		vg = strings.ReplaceAll(name[:i], "--", "-")
		lv = strings.ReplaceAll(name[i+1:], "--", "-")
		return vg, lv, vg != "" && lv != ""
	}
	return "", "", false
}
