// Package mounttab parses the tables that say what is mounted where:
// fstab(5), which a tree or an image mounts at boot, and
// /proc/self/mountinfo, which a running host has mounted now. crypttab(5)
// shares fstab's whitespace table, and reads it through Rows.
package mounttab

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"

	"github.com/gpuhost/gpuhost/facts/collect/textfile"
)

// MaxEntries bounds the rows of one table: a crafted file with millions
// of lines must not become millions of entries.
const MaxEntries = 4096

// Row is one entry of a whitespace table and the line it is on.
type Row struct {
	Line   int
	Fields []string
}

// Rows splits a whitespace table (fstab, crypttab) into the fields of
// each entry, skipping blanks and comments, and refusing binary text, rows
// of the wrong width and more than MaxEntries rows.
func Rows(data []byte, minFields, maxFields int) ([]Row, error) {
	var rows []Row
	for i, l := range textfile.Lines(data) {
		if err := textfile.CheckLine([]byte(l)); err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		fields := strings.Fields(l)
		if len(fields) == 0 || strings.HasPrefix(fields[0], "#") {
			continue
		}
		if len(fields) < minFields || len(fields) > maxFields {
			return nil, fmt.Errorf("line %d: want %d to %d fields, got %d", i+1, minFields, maxFields, len(fields))
		}
		if len(rows) >= MaxEntries {
			return nil, fmt.Errorf("line %d: more than %d entries", i+1, MaxEntries)
		}
		rows = append(rows, Row{Line: i + 1, Fields: fields})
	}
	return rows, nil
}

// FstabEntry is one line of fstab(5), Line its line number.
type FstabEntry struct {
	Spec, File, Type string
	Options          []string
	Line             int
}

// ParseFstab reads fstab(5), decoding the octal escapes (\040) it uses for
// blanks in names.
func ParseFstab(data []byte) ([]FstabEntry, error) {
	rows, err := Rows(data, 3, 6)
	if err != nil {
		return nil, err
	}
	var out []FstabEntry
	for _, row := range rows {
		fields := row.Fields
		ent := FstabEntry{Spec: Unescape(fields[0]), File: Unescape(fields[1]), Type: fields[2], Line: row.Line}
		if len(fields) > 3 {
			ent.Options = strings.Split(fields[3], ",")
		}
		out = append(out, ent)
	}
	return out, nil
}

// Mount is one mount: a line of /proc/self/mountinfo, or an fstab entry
// seen as the mount it asks for (MajMin then empty). FSType is the
// filesystem's type (ext4, proc, nfs4).
type Mount struct {
	MajMin, Point, Source, FSType string
}

// ParseMountinfo reads /proc/PID/mountinfo (proc(5)), through moby's
// parser; the caller bounds the bytes, and this the mounts.
func ParseMountinfo(data []byte) ([]Mount, error) {
	infos, err := mountinfo.GetMountsFromReader(bytes.NewReader(data), nil)
	if err != nil {
		return nil, err
	}
	// A host has more mounts than it has fstab lines: containers, snaps
	// and per-unit namespaces each add some.
	if len(infos) > 4*MaxEntries {
		return nil, fmt.Errorf("more than %d mounts", 4*MaxEntries)
	}
	out := make([]Mount, 0, len(infos))
	for _, m := range infos {
		out = append(out, Mount{MajMin: fmt.Sprintf("%d:%d", m.Major, m.Minor), Point: m.Mountpoint, Source: m.Source, FSType: m.FSType})
	}
	return out, nil
}

// For returns the mount holding file: the longest mount point that
// prefixes it, the last one listed winning (it is on top).
func For(mounts []Mount, file string) (Mount, bool) {
	var best Mount
	found := false
	for _, m := range mounts {
		p := m.Point
		if p == file || p == "/" || strings.HasPrefix(file, strings.TrimSuffix(p, "/")+"/") {
			if !found || len(p) >= len(best.Point) {
				best, found = m, true
			}
		}
	}
	return best, found
}

// Unescape decodes the \NNN escapes that fstab, /proc/swaps and mountinfo
// write for blanks and backslashes in names.
func Unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
