package ubunturepo

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
)

// arMagic opens every ar archive, and so every .deb.
const arMagic = "!<arch>\n"

// arMember is one member of an ar archive: its name and where its data
// lies in the file.
type arMember struct {
	name         string
	offset, size int64
}

// Bounds on a .deb's ar structure: a .deb has three members, and a header
// that claims more than the file holds is refused before it is read.
const maxArMembers = 16

// readAr lists an ar archive's members.
func readAr(r io.ReaderAt, size int64) ([]arMember, error) {
	magic := make([]byte, len(arMagic))
	if _, err := r.ReadAt(magic, 0); err != nil || string(magic) != arMagic {
		return nil, errors.New("not an ar archive")
	}
	var members []arMember
	off := int64(len(arMagic))
	hdr := make([]byte, 60)
	for off < size {
		if len(members) == maxArMembers {
			return nil, fmt.Errorf("more than %d ar members", maxArMembers)
		}
		if _, err := r.ReadAt(hdr, off); err != nil {
			return nil, fmt.Errorf("ar header at %d: %w", off, err)
		}
		if string(hdr[58:60]) != "`\n" {
			return nil, fmt.Errorf("ar header at %d: bad terminator", off)
		}
		n, err := strconv.ParseInt(strings.TrimSpace(string(hdr[48:58])), 10, 64)
		if err != nil || n < 0 || n > size-off-60 {
			return nil, fmt.Errorf("ar header at %d: bad size %q", off, hdr[48:58])
		}
		name := strings.TrimSuffix(strings.TrimSpace(string(hdr[:16])), "/")
		members = append(members, arMember{name: name, offset: off + 60, size: n})
		off += 60 + n + n%2
	}
	return members, nil
}

// arHeader is a member's header as dpkg-deb writes it: dated 0, owned by
// root, mode 0644.
func arHeader(name string, size int64) []byte {
	return fmt.Appendf(nil, "%-16s%-12d%-6d%-6d%-8s%-10d`\n", name, 0, 0, 0, "100644", size)
}

// rewriteDeb writes out a copy of the package in, whose control file is
// control and whose data.tar member is in's own, byte for byte. The other
// control files (md5sums, conffiles, maintainer scripts) are kept.
func rewriteDeb(in, out string, control []byte) error {
	ctl, err := exec.Command("dpkg-deb", "--ctrl-tarfile", in).Output()
	if err != nil {
		return fmt.Errorf("dpkg-deb --ctrl-tarfile %s: %w", in, err)
	}
	newCtl, err := replaceControl(ctl, control)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	members, err := readAr(f, st.Size())
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	var data *arMember
	for i, m := range members {
		if strings.HasPrefix(m.name, "data.tar") {
			data = &members[i]
		}
	}
	if len(members) == 0 || members[0].name != "debian-binary" || data == nil {
		return fmt.Errorf("%s: not a binary package (members %v)", in, members)
	}
	w, err := os.Create(out)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	buf.WriteString(arMagic)
	buf.Write(arHeader("debian-binary", 4))
	buf.WriteString("2.0\n")
	buf.Write(arHeader("control.tar.gz", int64(len(newCtl))))
	buf.Write(newCtl)
	if len(newCtl)%2 == 1 {
		buf.WriteByte('\n')
	}
	buf.Write(arHeader(data.name, data.size))
	if _, err := w.Write(buf.Bytes()); err != nil {
		w.Close()
		return err
	}
	if _, err := io.Copy(w, io.NewSectionReader(f, data.offset, data.size)); err != nil {
		w.Close()
		return err
	}
	if data.size%2 == 1 {
		if _, err := w.Write([]byte{'\n'}); err != nil {
			w.Close()
			return err
		}
	}
	return w.Close()
}

// replaceControl returns control.tar.gz with the control file replaced
// and every other entry as it was.
func replaceControl(ctlTar, control []byte) ([]byte, error) {
	var out bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&out, gzip.BestSpeed)
	zw.ModTime = Date
	tw := tar.NewWriter(zw)
	tr := tar.NewReader(bytes.NewReader(ctlTar))
	replaced := false
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading control.tar: %w", err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			return nil, err
		}
		if strings.TrimPrefix(h.Name, "./") == "control" {
			body, replaced = control, true
			h.Size = int64(len(body))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(body); err != nil {
			return nil, err
		}
	}
	if !replaced {
		return nil, errors.New("control.tar has no control file")
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// debControl reads a package's control file.
func debControl(deb string) (stanza, error) {
	out, err := exec.Command("dpkg-deb", "--field", deb).Output()
	if err != nil {
		return nil, fmt.Errorf("dpkg-deb --field %s: %w", deb, err)
	}
	s := parseStanzas(out)
	if len(s) != 1 {
		return nil, fmt.Errorf("%s: control file has %d paragraphs", deb, len(s))
	}
	return s[0], nil
}
