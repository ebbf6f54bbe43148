// Package ovmfvars reads and adds to the UEFI variables of an edk2 (OVMF)
// variable file, such as Debian's OVMF_VARS_4M.ms.fd: a firmware volume
// whose first block holds an authenticated variable store, variables one
// after another up to the store's free space. It is how a boot test gives
// a VM's firmware a variable it reads at boot (shim's MokList) before the
// VM ever runs, as the firmware itself would have stored it.
//
// The layout is edk2's: EFI_FIRMWARE_VOLUME_HEADER (MdePkg
// Pi/PiFirmwareVolume.h), VARIABLE_STORE_HEADER and
// AUTHENTICATED_VARIABLE_HEADER (MdeModulePkg Guid/VariableFormat.h).
package ovmfvars

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"unicode/utf16"
)

// GUID is an EFI GUID in its stored byte order: the first three fields
// little endian.
type GUID [16]byte

// ParseGUID reads the text form of a GUID, such as
// 605dab50-e046-4300-abb6-3dd810dd8b23.
func ParseGUID(s string) (GUID, error) {
	var g GUID
	var a uint32
	var b, c, d uint16
	var e uint64
	if len(s) != 36 {
		return g, fmt.Errorf("GUID %q: want 36 characters", s)
	}
	if n, err := fmt.Sscanf(s, "%08x-%04x-%04x-%04x-%012x", &a, &b, &c, &d, &e); err != nil || n != 5 {
		return g, fmt.Errorf("GUID %q: not 8-4-4-4-12 hex digits", s)
	}
	le, be := binary.LittleEndian, binary.BigEndian
	le.PutUint32(g[0:], a)
	le.PutUint16(g[4:], b)
	le.PutUint16(g[6:], c)
	be.PutUint16(g[8:], d)
	var tail [8]byte
	be.PutUint64(tail[:], e)
	copy(g[10:], tail[2:])
	return g, nil
}

// MustGUID is ParseGUID for the constants below.
func MustGUID(s string) GUID {
	g, err := ParseGUID(s)
	if err != nil {
		panic(err)
	}
	return g
}

// String is the GUID's text form.
func (g GUID) String() string {
	le := binary.LittleEndian
	return fmt.Sprintf("%08x-%04x-%04x-%x-%x", le.Uint32(g[0:]), le.Uint16(g[4:]), le.Uint16(g[6:]), g[8:10], g[10:16])
}

// GUIDs the store and its variables are named by.
var (
	// nvDataFV is EFI_SYSTEM_NV_DATA_FV_GUID, the file system of the
	// firmware volume holding the variables.
	nvDataFV = MustGUID("fff12b8d-7696-4c8b-a985-2747075b4f50")
	// authStore is gEfiAuthenticatedVariableGuid, the signature of a store
	// of AUTHENTICATED_VARIABLE_HEADERs (what OVMF with Secure Boot uses).
	authStore = MustGUID("aaf32c78-947b-439a-a180-2e144ec37792")
	// ShimLock is shim's vendor GUID, under which MokList lives.
	ShimLock = MustGUID("605dab50-e046-4300-abb6-3dd810dd8b23")
	// GlobalVariable is EFI_GLOBAL_VARIABLE (PK, KEK, SecureBoot).
	GlobalVariable = MustGUID("8be4df61-93ca-11d2-aa0d-00e098032b8c")
	// ImageSecurityDatabase is EFI_IMAGE_SECURITY_DATABASE_GUID (db, dbx).
	ImageSecurityDatabase = MustGUID("d719b2cb-3d3a-4596-a3bc-dad00e67656f")
)

// Variable attributes (UEFI 2.10, 8.2).
const (
	NonVolatile    uint32 = 0x1
	BootService    uint32 = 0x2
	RuntimeAccess  uint32 = 0x4
	TimeBasedAuthn uint32 = 0x20
)

// Sizes and markers of the format.
const (
	fvHeaderMin     = 0x48 // the FV header with one block map entry and its terminator
	fvSignature     = "_FVH"
	storeHeaderSize = 28
	storeFormatted  = 0x5a
	storeHealthy    = 0xfe
	varHeaderSize   = 60
	varStartID      = 0x55aa
	varAlign        = 4
	// A variable's State starts at 0xff and bits are cleared as it moves
	// on: added (0x3f), then in deleted transition (0x3e), then deleted.
	stateAdded      = 0x3f
	stateInDeletion = 0xfe
	stateDeleted    = 0xfd
	// maxVariables bounds the headers walked: a store of 256 KiB holds
	// fewer, so more means the walk is lost in data that is no store.
	maxVariables = 1 << 14
)

// Variable is one variable of the store.
type Variable struct {
	Name       string
	Vendor     GUID
	Attributes uint32
	Data       []byte
	// Live is false for a variable the firmware has since deleted or
	// replaced: the store keeps the old copy until it reclaims space.
	Live bool
	// Offset is where its header lies in the file.
	Offset int
}

// Store is a variable file read into memory.
type Store struct {
	file      []byte
	storeAt   int // the VARIABLE_STORE_HEADER
	storeEnd  int // the end of the store's space
	free      int // the first byte after the last variable
	variables []Variable
}

// Parse reads a variable file: the firmware volume header, the store
// header and every variable up to the free space. It refuses a file that
// is not an authenticated edk2 store, or whose headers point outside it.
func Parse(file []byte) (*Store, error) {
	if len(file) < fvHeaderMin {
		return nil, fmt.Errorf("%d bytes: too short for a firmware volume header", len(file))
	}
	le := binary.LittleEndian
	if string(file[40:44]) != fvSignature {
		return nil, errors.New("no firmware volume signature _FVH at byte 40")
	}
	if !bytes.Equal(file[16:32], nvDataFV[:]) {
		return nil, fmt.Errorf("the firmware volume's file system is %s, not the NV data volume %s", GUID(file[16:32]), nvDataFV)
	}
	fvLen := le.Uint64(file[32:])
	hdrLen := int(le.Uint16(file[48:]))
	if fvLen > uint64(len(file)) || hdrLen < fvHeaderMin || hdrLen+storeHeaderSize > len(file) || uint64(hdrLen) > fvLen {
		return nil, fmt.Errorf("a firmware volume of %d bytes with a %d-byte header in a file of %d", fvLen, hdrLen, len(file))
	}
	if sum := checksum16(file[:hdrLen]); sum != 0 {
		return nil, fmt.Errorf("the firmware volume header's checksum is off by %#04x", sum)
	}
	s := &Store{file: file, storeAt: hdrLen}
	h := file[hdrLen:]
	if !bytes.Equal(h[:16], authStore[:]) {
		return nil, fmt.Errorf("the variable store is %s, not an authenticated store (%s)", GUID(h[:16]), authStore)
	}
	size := int64(le.Uint32(h[16:]))
	if size < storeHeaderSize || int64(hdrLen)+size > int64(fvLen) {
		return nil, fmt.Errorf("a variable store of %d bytes at byte %d of a %d-byte volume", size, hdrLen, fvLen)
	}
	if h[20] != storeFormatted || h[21] != storeHealthy {
		return nil, fmt.Errorf("the variable store is not formatted and healthy (format %#02x, state %#02x)", h[20], h[21])
	}
	s.storeEnd = hdrLen + int(size)
	if err := s.walk(); err != nil {
		return nil, err
	}
	return s, nil
}

// walk reads the variables from the store's first up to its free space.
func (s *Store) walk() error {
	le := binary.LittleEndian
	off := align(s.storeAt + storeHeaderSize)
	for n := 0; ; n++ {
		if off+varHeaderSize > s.storeEnd || le.Uint16(s.file[off:]) != varStartID {
			s.free = off
			return nil
		}
		if n >= maxVariables {
			return fmt.Errorf("more than %d variables", maxVariables)
		}
		h := s.file[off:]
		nameSize, dataSize := int64(le.Uint32(h[36:])), int64(le.Uint32(h[40:]))
		end := int64(off) + varHeaderSize + nameSize + dataSize
		if nameSize < 2 || nameSize%2 != 0 || end > int64(s.storeEnd) {
			return fmt.Errorf("the variable at byte %d: a %d-byte name and %d bytes of data overrun the store", off, nameSize, dataSize)
		}
		name, err := decodeName(h[varHeaderSize : varHeaderSize+nameSize])
		if err != nil {
			return fmt.Errorf("the variable at byte %d: %w", off, err)
		}
		state := h[2]
		v := Variable{
			Name: name, Vendor: GUID(h[44:60]), Attributes: le.Uint32(h[4:]), Offset: off,
			Data: bytes.Clone(h[varHeaderSize+nameSize : varHeaderSize+nameSize+dataSize]),
			Live: state == stateAdded || state == stateAdded&stateInDeletion,
		}
		s.variables = append(s.variables, v)
		off = align(int(end))
	}
}

// decodeName reads a NUL-terminated UCS-2 name.
func decodeName(b []byte) (string, error) {
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = binary.LittleEndian.Uint16(b[2*i:])
	}
	if u[len(u)-1] != 0 {
		return "", errors.New("its name is not NUL-terminated")
	}
	u = u[:len(u)-1]
	for _, c := range u {
		if c == 0 {
			return "", errors.New("its name holds a NUL")
		}
	}
	return string(utf16.Decode(u)), nil
}

func align(n int) int { return (n + varAlign - 1) &^ (varAlign - 1) }

// checksum16 is the sum of the 16-bit words of b, which a valid firmware
// volume header makes zero.
func checksum16(b []byte) uint16 {
	var sum uint16
	for i := 0; i+1 < len(b); i += 2 {
		sum += binary.LittleEndian.Uint16(b[i:])
	}
	return sum
}

// Variables are the store's variables in the order they are stored, the
// deleted ones included (Live false).
func (s *Store) Variables() []Variable { return s.variables }

// Get returns the live variable name under vendor.
func (s *Store) Get(name string, vendor GUID) (Variable, bool) {
	for _, v := range s.variables {
		if v.Live && v.Name == name && v.Vendor == vendor {
			return v, true
		}
	}
	return Variable{}, false
}

// Free is how many bytes the store has left for new variables.
func (s *Store) Free() int { return s.storeEnd - s.free }

// Bytes is the file as it now is.
func (s *Store) Bytes() []byte { return s.file }

// Set stores a variable as the firmware's SetVariable would with no
// authentication: appended in the free space, and any live copy of the
// same name and vendor marked deleted. Variables that need an
// authenticated write (time-based authenticated ones: PK, KEK, db) are
// refused, as the firmware would refuse them unsigned.
func (s *Store) Set(name string, vendor GUID, attributes uint32, data []byte) error {
	if attributes&TimeBasedAuthn != 0 {
		return fmt.Errorf("setting %s: a time-based authenticated variable needs a signed write", name)
	}
	if attributes&NonVolatile == 0 {
		return fmt.Errorf("setting %s: a volatile variable does not live in the store", name)
	}
	if name == "" {
		return errors.New("setting a variable with no name")
	}
	u := utf16.Encode([]rune(name + "\x00"))
	rec := make([]byte, varHeaderSize+2*len(u)+len(data))
	le := binary.LittleEndian
	le.PutUint16(rec[0:], varStartID)
	rec[2] = stateAdded
	le.PutUint32(rec[4:], attributes)
	le.PutUint32(rec[36:], uint32(2*len(u)))
	le.PutUint32(rec[40:], uint32(len(data)))
	copy(rec[44:], vendor[:])
	for i, c := range u {
		le.PutUint16(rec[varHeaderSize+2*i:], c)
	}
	copy(rec[varHeaderSize+2*len(u):], data)
	if len(rec) > s.Free() {
		return fmt.Errorf("setting %s: %d bytes do not fit in the store's %d free", name, len(rec), s.Free())
	}
	for i, v := range s.variables {
		if v.Live && v.Name == name && v.Vendor == vendor {
			s.file[v.Offset+2] &= stateDeleted
			s.variables[i].Live = false
		}
	}
	at := s.free
	copy(s.file[at:], rec)
	s.variables = append(s.variables, Variable{Name: name, Vendor: vendor, Attributes: attributes, Data: bytes.Clone(data), Live: true, Offset: at})
	s.free = align(at + len(rec))
	return nil
}
